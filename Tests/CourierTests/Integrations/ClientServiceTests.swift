#if ServiceLifecycle
import CourierTesting
import Foundation
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Client as a ServiceLifecycle Service (trait ServiceLifecycle)", .timeLimit(.minutes(1)))
struct ClientServiceTests {
    private static let url = exampleBaseURL.appendingPathComponent("x")

    @Test("a graceful shutdown drains: requests in flight complete, new ones are refused, run() returns after them")
    func gracefulShutdownDrains() async throws {
        let holding = HoldingTransport()
        let client = Client(transport: holding)
        let requests = (0..<3).map { _ in Task { try await client.send(URLRequest(url: Self.url)) } }
        await holding.waitUntilHolding(3)

        let runReturned = Locked(false)
        try await testGracefulShutdown { trigger in
            async let run: Void = {
                try await client.run()
                runReturned.withLock { $0 = true }
            }()
            #expect(!client.isShutDown)
            trigger.triggerGracefulShutdown()
            // run() is now waiting for the three requests.
            try await waitUntil { client.lifecycle.idleWaiterCount == 1 }
            let refused = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: Self.url)) }
            #expect(refused?.code == .clientShutDown)
            #expect(holding.requests.count == 3)
            #expect(runReturned.value == false)

            #expect(holding.releaseAll() == 3)
            try await run
        }
        #expect(runReturned.value)
        for request in requests { #expect(try await request.join().1.statusCode == 200) }
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("before a graceful shutdown, run() leaves the client working")
    func runsUntilShutdown() async throws {
        let client = Client(transport: MockTransport.ok)
        try await testGracefulShutdown { trigger in
            async let run: Void = client.run()
            #expect(try await client.send(URLRequest(url: Self.url)).1.statusCode == 200)
            #expect(!client.isShutDown)
            trigger.triggerGracefulShutdown()
            try await run
        }
        #expect(client.isShutDown)
    }

    @Test("cancelled, run() returns at once: the client is shut down and cancellable requests are cancelled")
    func cancellation() async throws {
        let arrived = Arrivals()
        let gate = Gate()
        let hanging = MockTransport.hanging(counting: arrived)
        let held = MockTransport.held(by: gate, counting: arrived)
        let cancellable = Client(configuration: .init(transport: hanging, isCancellableOnShutdown: true))
        let plain = Client(transport: held)
        let cancellableRequest = Task { try await cancellable.send(URLRequest(url: Self.url)) }
        let plainRequest = Task { try await plain.send(URLRequest(url: Self.url)) }
        await arrived.wait(for: 2)

        let runs = Task {
            await testGracefulShutdown { _ in
                async let first: Void = cancellable.run()
                async let second: Void = plain.run()
                _ = try? await (first, second)
            }
        }
        runs.cancel()
        await runs.join()
        #expect(cancellable.isShutDown && plain.isShutDown)
        let refused = await #expect(throws: CourierError.self) { try await plain.send(URLRequest(url: Self.url)) }
        #expect(refused?.code == .clientShutDown)
        // The cancellable request was cancelled; the other one is still its caller's.
        let cancelled = await #expect(throws: CourierError.self) { try await cancellableRequest.join() }
        #expect(cancelled?.code == .clientShutDown)
        #expect(hanging.cancellationCount == 1)
        #expect(plain.lifecycle.inFlight == 1)
        gate.open()
        #expect(try await plainRequest.join().1.statusCode == 200)
    }
}
#endif
