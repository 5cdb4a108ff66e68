import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("HoldingTransport and gates", .timeLimit(.minutes(1)))
struct HoldingTransportTests {
    /// Where `holding` sends the requests it lets go.
    private let base = MockTransport.ok
    private let holding: HoldingTransport

    init() {
        holding = HoldingTransport(wrapping: base)
    }

    @Test("requests are held until released, and the test knows how many are held")
    func holdsUntilReleased() async throws {
        let holding = HoldingTransport(wrapping: MockTransport(.status(204)))
        let calls = (0..<10).map { index in
            Task { try await holding.send(request(.get, "/items/\(index)")).1.statusCode }
        }
        await holding.waitUntilHolding(10)
        #expect(holding.heldCount == 10)
        #expect(holding.requests.count == 10)
        #expect(holding.release(3) == 3)
        #expect(holding.heldCount == 7)
        #expect(holding.releaseAll() == 7)
        for call in calls { #expect(try await call.join() == 204) }
        #expect(holding.heldCount == 0)
        #expect(holding.peakHeldCount == 10)
    }

    @Test("release lets the longest-held requests go first")
    func releaseOrder() async throws {
        let finished = Locked<[Int]>([])
        let done = Arrivals()
        var tasks: [Task<Void, any Error>] = []
        for index in 0..<3 {
            tasks.append(
                Task {
                    _ = try await holding.send(request(.get, "/\(index)"))
                    finished.withLock { $0.append(index) }
                    done.arrive()
                }
            )
            await holding.waitUntilHolding(index + 1)
        }
        #expect(holding.heldRequests.map(\.path) == ["/0", "/1", "/2"])
        for step in 1...3 {
            holding.release()
            await done.wait(for: step)
        }
        #expect(finished.value == [0, 1, 2])
        for task in tasks { try await task.join() }
    }

    @Test("after open() requests pass straight through; close() holds again")
    func openAndClose() async throws {
        holding.open()
        #expect(holding.isOpen)
        #expect(try await holding.send(request(.get, "/free")).1.statusCode == 200)
        holding.close()
        let held = Task { try await holding.send(request(.get, "/held")) }
        await holding.waitUntilHolding(1)
        #expect(holding.heldRequests.map(\.path) == ["/held"])
        holding.open()
        _ = try await held.join()
    }

    @Test("a held request that is cancelled leaves with CancellationError and is never sent")
    func cancellation() async throws {
        let call = Task { try await holding.send(request(.get, "/cancel-me")) }
        await holding.waitUntilHolding(1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(holding.heldCount == 0)
        #expect(base.callCount == 0)
    }

    @Test("100 requests through a client are all in flight at once before any is answered")
    func storm() async throws {
        let api = MockTransport { MockRoute.get("/me").replies(.json(User(id: "1", name: "Ada"))).expectCalls(100) }
        let holding = HoldingTransport(wrapping: api)
        let client = Client(baseURL: testBase, transport: holding)
        try await withThrowingTaskGroup(of: User.self) { group in
            for _ in 0..<100 { group.addTask { try await client.send(.get("/me")) } }
            await holding.waitUntilHolding(100)
            #expect(api.callCount == 0)
            holding.open()
            for try await user in group { #expect(user.name == "Ada") }
        }
        #expect(holding.peakHeldCount == 100)
        #expect(api.unmetExpectations.isEmpty)
    }

    @Test("Gate.waitUnlessCancelled returns when the gate opens and throws when cancelled")
    func cancellableGate() async throws {
        let gate = Gate()
        let waiting = Arrivals()
        let released = Task {
            waiting.arrive()
            try await gate.waitUnlessCancelled()
        }
        let cancelled = Task {
            waiting.arrive()
            try await gate.waitUnlessCancelled()
        }
        await waiting.wait(for: 2)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.join() }
        #expect(gate.isOpen == false)
        gate.open()
        try await released.join()
        try await gate.waitUnlessCancelled()
    }

    @Test("a reply held until a gate opens counts its arrivals")
    func heldReply() async throws {
        let arrived = Arrivals()
        let release = Gate()
        let api = MockTransport { MockRoute.get("/slow").replies(.text("ok").held(until: release, counting: arrived)) }
        let finished = Locked(0)
        let calls = (0..<5).map { _ in
            Task {
                let result = try await api.send(request(.get, "/slow"))
                finished.withLock { $0 += 1 }
                return result
            }
        }
        await arrived.wait(for: 5)
        #expect(finished.value == 0)
        release.open()
        for call in calls { #expect(try await call.join().1.statusCode == 200) }
    }
}
