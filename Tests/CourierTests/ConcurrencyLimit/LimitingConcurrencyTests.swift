import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.limitingConcurrency", .timeLimit(.minutes(1)))
struct LimitingConcurrencyTests {
    private let holding = HoldingTransport()

    private func request(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    /// Sends a request for `path` on host a through `client`, the first, and waits until `holding` holds it.
    private func sendFirst(_ path: String, through client: Client) async -> Task<(Data, HTTPURLResponse), any Error> {
        let task = Task { try await client.send(request("https://a.example.test/\(path)")) }
        await holding.waitUntilHolding(1)
        return task
    }

    /// A limiter with these limits, and a client that sends through it to `holding`.
    private func limitedClient(
        maxInFlight: Int,
        perHost: Int? = nil,
        maxQueued: Int? = nil
    ) -> (limiter: ConcurrencyLimiter, client: Client) {
        let limiter = ConcurrencyLimiter(maxInFlight: maxInFlight, perHost: perHost, maxQueued: maxQueued)
        return (limiter, Client(transport: holding, middleware: [.limitingConcurrency(limiter)]))
    }

    @Test("no more than maxInFlight requests reach the transport at once")
    func overallLimit() async throws {
        let (limiter, client) = limitedClient(maxInFlight: 4)
        let requests = (0..<30).map { request("https://a.example.test/\($0)") }
        let batch = Task { await client.sendAll(requests, maxConcurrency: 30) }

        await holding.waitUntilHolding(4)
        try await waitUntil { limiter.waiting == 26 }
        // Every request has reached the limiter: four hold a permit and are in the transport, the rest wait.
        #expect(holding.heldCount == 4)
        #expect(limiter.inFlight == 4)
        await answerInRounds(holding, total: 30, limit: 4)
        let results = await batch.join()

        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(holding.peakHeldCount == 4)
        #expect(limiter.inFlight == 0)
        #expect(limiter.waiting == 0)
    }

    @Test("waiting requests get their permits in the order they arrived")
    func firstInFirstOut() async throws {
        let (limiter, client) = limitedClient(maxInFlight: 1)
        let first = await sendFirst("first", through: client)
        var waiters: [Task<(Data, HTTPURLResponse), any Error>] = []
        for index in 0..<8 {
            waiters.append(Task { try await client.send(request("https://a.example.test/\(index)")) })
            // The next one starts only once this one is queued, so the queue's order is 0, 1, 2, ….
            try await waitUntil { limiter.waiting == index + 1 }
        }

        holding.open()
        _ = try await first.join()
        for waiter in waiters { _ = try await waiter.join() }

        // One permit: each request reaches the transport only after the one before it has finished.
        #expect(holding.requests.map { $0.url!.lastPathComponent } == ["first"] + (0..<8).map(String.init))
    }

    @Test("a per-host limit holds for each host, and a busy host does not hold up another")
    func perHostLimit() async throws {
        let (limiter, client) = limitedClient(maxInFlight: 10, perHost: 2)
        // Host a's ten requests come first; b's must not queue behind them.
        let requests =
            (0..<10).map { request("https://a.example.test/\($0)") }
            + (0..<5).map { request("https://b.example.test/\($0)") }
        let batch = Task { await client.sendAll(requests, maxConcurrency: 15) }

        await holding.waitUntilHolding(4)
        try await waitUntil { limiter.waiting == 11 }
        let heldHosts = holding.heldRequests.map { $0.url!.host! }
        #expect(heldHosts.filter { $0 == "a.example.test" }.count == 2)
        #expect(heldHosts.filter { $0 == "b.example.test" }.count == 2)
        holding.open()
        let results = await batch.join()

        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(limiter.inFlight == 0)
    }

    @Test("a cancelled waiter leaves the queue with CancellationError and takes no permit")
    func cancelledWaiter() async throws {
        let (limiter, client) = limitedClient(maxInFlight: 1)
        let holder = await sendFirst("holder", through: client)
        let waiter = Task { try await client.send(request("https://a.example.test/waiter")) }
        let next = Task { try await client.send(request("https://a.example.test/next")) }
        try await waitUntil { limiter.waiting == 2 }

        waiter.cancel()

        await #expect(throws: CancellationError.self) { try await waiter.join() }
        #expect(limiter.waiting == 1)
        holding.open()
        _ = try await holder.join()
        _ = try await next.join()
        #expect(holding.requests.map { $0.url!.lastPathComponent } == ["holder", "next"])
        #expect(limiter.inFlight == 0)
    }

    @Test("with maxQueued, a request beyond the queue fails at once with concurrencyLimited")
    func loadShedding() async throws {
        let (limiter, client) = limitedClient(maxInFlight: 1, maxQueued: 1)
        let holder = await sendFirst("1", through: client)
        let queued = Task { try await client.send(request("https://a.example.test/2")) }
        try await waitUntil { limiter.waiting == 1 }

        let error = await #expect(throws: CourierError.self) {
            try await client.send(request("https://a.example.test/3"))
        }

        #expect(error?.code == .concurrencyLimited)
        #expect(error?.middleware == "limitingConcurrency")
        holding.open()
        _ = try await holder.join()
        _ = try await queued.join()
        #expect(holding.requests.count == 2)
    }

    @Test("one limiter shared by two clients bounds them together")
    func sharedLimiter() async throws {
        let limiter = ConcurrencyLimiter(maxInFlight: 3)
        let first = Client(transport: holding, middleware: [.limitingConcurrency(limiter)])
        let second = Client(transport: holding, middleware: [.limitingConcurrency(limiter)])
        let a = Task {
            await first.sendAll((0..<5).map { request("https://a.example.test/\($0)") }, maxConcurrency: 5)
        }
        let b = Task {
            await second.sendAll((0..<5).map { request("https://b.example.test/\($0)") }, maxConcurrency: 5)
        }

        await holding.waitUntilHolding(3)
        try await waitUntil { limiter.waiting == 7 }
        #expect(holding.heldCount == 3)
        await answerInRounds(holding, total: 10, limit: 3)
        _ = await (a.join(), b.join())

        #expect(holding.peakHeldCount == 3)
        #expect(holding.requests.count == 10)
    }
}
