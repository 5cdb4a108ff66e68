import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.limitingConcurrency")
struct LimitingConcurrencyTests {
    private func request(_ url: String) -> URLRequest {
        URLRequest(url: URL(string: url)!)
    }

    @Test("no more than maxInFlight requests reach the transport at once", .timeLimit(.minutes(1)))
    func overallLimit() async throws {
        let gauge = ConcurrencyGauge()
        let arrived = Arrivals()
        let release = Gate()
        let transport = MockTransport { _ in
            gauge.enter()
            defer { gauge.leave() }
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let limiter = ConcurrencyLimiter(maxInFlight: 4)
        let client = Client(transport: transport, middleware: [.limitingConcurrency(limiter)])
        let requests = (0..<30).map { request("https://a.example.test/\($0)") }
        let batch = Task { await client.sendAll(requests, maxConcurrency: 30) }

        await arrived.wait(for: 4)
        await waitUntil { limiter.waiting == 26 }
        #expect(arrived.count == 4)
        #expect(limiter.inFlight == 4)
        release.open()
        let results = await batch.value

        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(gauge.peak == 4)
        #expect(limiter.inFlight == 0)
        #expect(limiter.waiting == 0)
    }

    @Test("a per-host limit holds for each host, and a busy host does not hold up another", .timeLimit(.minutes(1)))
    func perHostLimit() async throws {
        let gauges = ["a.example.test": ConcurrencyGauge(), "b.example.test": ConcurrencyGauge()]
        let arrived = Arrivals()
        let release = Gate()
        let transport = MockTransport { request in
            let gauge = gauges[request.url!.host!]!
            gauge.enter()
            defer { gauge.leave() }
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let client = Client(transport: transport, middleware: [.limitingConcurrency(maxInFlight: 10, perHost: 2)])
        // Host a's ten requests come first; b's must not queue behind them.
        let requests =
            (0..<10).map { request("https://a.example.test/\($0)") }
            + (0..<5).map { request("https://b.example.test/\($0)") }
        let batch = Task { await client.sendAll(requests, maxConcurrency: 15) }

        await arrived.wait(for: 4)
        #expect(gauges["a.example.test"]!.current == 2)
        #expect(gauges["b.example.test"]!.current == 2)
        release.open()
        let results = await batch.value

        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(gauges["a.example.test"]!.peak == 2)
        #expect(gauges["b.example.test"]!.peak == 2)
    }

    @Test("a cancelled waiter leaves the queue with CancellationError and takes no permit", .timeLimit(.minutes(1)))
    func cancelledWaiter() async throws {
        let arrived = Arrivals()
        let release = Gate()
        let transport = MockTransport { _ in
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let limiter = ConcurrencyLimiter(maxInFlight: 1)
        let client = Client(transport: transport, middleware: [.limitingConcurrency(limiter)])
        let holder = Task { try await client.send(request("https://a.example.test/holder")) }
        await arrived.wait(for: 1)
        let waiter = Task { try await client.send(request("https://a.example.test/waiter")) }
        let next = Task { try await client.send(request("https://a.example.test/next")) }
        await waitUntil { limiter.waiting == 2 }

        waiter.cancel()

        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(limiter.waiting == 1)
        release.open()
        _ = try await holder.value
        _ = try await next.value
        #expect(transport.requests.map { $0.url!.lastPathComponent } == ["holder", "next"])
        #expect(limiter.inFlight == 0)
    }

    @Test("with maxQueued, a request beyond the queue fails at once with concurrencyLimited", .timeLimit(.minutes(1)))
    func loadShedding() async throws {
        let arrived = Arrivals()
        let release = Gate()
        let transport = MockTransport { _ in
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let limiter = ConcurrencyLimiter(maxInFlight: 1, maxQueued: 1)
        let client = Client(transport: transport, middleware: [.limitingConcurrency(limiter)])
        let holder = Task { try await client.send(request("https://a.example.test/1")) }
        await arrived.wait(for: 1)
        let queued = Task { try await client.send(request("https://a.example.test/2")) }
        await waitUntil { limiter.waiting == 1 }

        let error = await #expect(throws: CourierError.self) {
            try await client.send(request("https://a.example.test/3"))
        }

        #expect(error?.code == .concurrencyLimited)
        #expect(error?.middleware == "limitingConcurrency")
        release.open()
        _ = try await holder.value
        _ = try await queued.value
        #expect(transport.callCount == 2)
    }

    @Test("one limiter shared by two clients bounds them together", .timeLimit(.minutes(1)))
    func sharedLimiter() async throws {
        let gauge = ConcurrencyGauge()
        let arrived = Arrivals()
        let release = Gate()
        let transport = MockTransport { _ in
            gauge.enter()
            defer { gauge.leave() }
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let limiter = ConcurrencyLimiter(maxInFlight: 3)
        let first = Client(transport: transport, middleware: [.limitingConcurrency(limiter)])
        let second = Client(transport: transport, middleware: [.limitingConcurrency(limiter)])
        let a = Task {
            await first.sendAll((0..<5).map { request("https://a.example.test/\($0)") }, maxConcurrency: 5)
        }
        let b = Task {
            await second.sendAll((0..<5).map { request("https://b.example.test/\($0)") }, maxConcurrency: 5)
        }

        await arrived.wait(for: 3)
        await waitUntil { limiter.waiting == 7 }
        release.open()
        _ = await (a.value, b.value)

        #expect(gauge.peak == 3)
        #expect(transport.callCount == 10)
    }
}
