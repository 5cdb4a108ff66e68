import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Client graceful shutdown", .timeLimit(.minutes(1)))
struct ClientShutdownTests {
    private static let url = exampleBaseURL.appendingPathComponent("x")
    private let clock = ManualClock()
    private let gate = Gate()
    private let arrived = Arrivals()

    /// Awaits `task`, cancelling it if the test is cancelled (by its time limit), so a broken shutdown
    /// fails the test instead of hanging it.
    private static func result<T: Sendable>(of task: Task<T, Never>) async -> T {
        await withTaskCancellationHandler {
            await task.join()
        } onCancel: {
            task.cancel()
        }
    }

    private static func result<T: Sendable>(of task: Task<T, any Error>) async throws -> T {
        try await withTaskCancellationHandler {
            try await task.join()
        } onCancel: {
            task.cancel()
        }
    }

    private static func code(of body: () async throws -> Void) async -> CourierError.Code? {
        do {
            try await body()
            return nil
        } catch let error as CourierError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test("an idle client shuts down at once and then refuses requests without sending them")
    func refusesAfterShutdown() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport)
        _ = try await client.send(URLRequest(url: Self.url))
        #expect(client.isShutDown == false)

        await client.shutdown()
        #expect(client.isShutDown)
        let raw = await Self.code { _ = try await client.send(URLRequest(url: Self.url)) }
        let typed = await Self.code { let _: EmptyResponse = try await client.send(.get(Self.url.absoluteString)) }
        #expect(raw == .clientShutDown)
        #expect(typed == .clientShutDown)
        #expect(transport.callCount == 1)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("shutdown refuses new requests at once and returns when those in flight have ended")
    func waitsForInFlight() async throws {
        let transport = MockTransport { request in
            guard request.url?.lastPathComponent != "late" else { return .ok }
            arrived.arrive()
            await gate.wait()
            return .ok
        }
        let client = Client(transport: transport)
        let requests = (0..<3).map { _ in Task { try await client.send(URLRequest(url: Self.url)) } }
        await arrived.wait(for: 3)
        #expect(client.lifecycle.inFlight == 3)

        let endedWhenShutdownReturned = Locked<Int?>(nil)
        let shutdown = Task {
            await client.shutdown()
            endedWhenShutdownReturned.withLock { $0 = transport.callCount - client.lifecycle.inFlight }
        }
        try await waitUntil { client.lifecycle.idleWaiterCount == 1 }
        let late = Self.url.appendingPathComponent("late")
        let refused = await Self.code { _ = try await client.send(URLRequest(url: late)) }
        #expect(refused == .clientShutDown)
        #expect(endedWhenShutdownReturned.value == nil)

        gate.open()
        await Self.result(of: shutdown)
        for request in requests { #expect(try await Self.result(of: request).1.statusCode == 200) }
        #expect(endedWhenShutdownReturned.value == 3)
        #expect(transport.callCount == 3)
    }

    @Test("after the grace period, cancellable requests are cancelled and their callers get clientShutDown")
    func gracePeriodCancels() async throws {
        let transport = MockTransport.hanging(counting: arrived)
        let client = Client(transport: transport)
        await client.update { $0.isCancellableOnShutdown = true }
        #expect(client.lifecycle.isCancellable)

        let callerCancelled = Locked<[Bool]>([])
        let requests = (0..<2).map { _ in
            Task {
                let code = await Self.code { _ = try await client.send(URLRequest(url: Self.url)) }
                callerCancelled.withLock { $0.append(Task.isCancelled) }
                return code
            }
        }
        await arrived.wait(for: 2)
        let shutdown = Task { await client.shutdown(gracePeriod: .seconds(5), clock: clock) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        #expect(transport.cancellationCount == 0)
        clock.advance(by: .seconds(1))
        await Self.result(of: shutdown)

        for request in requests { #expect(await Self.result(of: request) == .clientShutDown) }
        #expect(callerCancelled.value == [false, false])
        #expect(transport.cancellationCount == 2)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("isCancellableOnShutdown reaches the shutdown from init(configuration:) and from every update")
    func cancellableFollowsConfiguration() async {
        let client = Client(configuration: .init(transport: MockTransport.ok, isCancellableOnShutdown: true))
        #expect(client.lifecycle.isCancellable)

        await client.update { $0.isCancellableOnShutdown = false }
        #expect(client.lifecycle.isCancellable == false)

        await client.update { $0.baseURL = nil }
        #expect(client.lifecycle.isCancellable == false)

        await client.update { $0.isCancellableOnShutdown = true }
        #expect(client.lifecycle.isCancellable)
    }

    @Test("requests that are not cancellable are waited for past the grace period")
    func gracePeriodWithoutCancellation() async throws {
        let transport = MockTransport.held(by: gate, counting: arrived)
        let client = Client(transport: transport)
        let request = Task { try await client.send(URLRequest(url: Self.url)) }
        await arrived.wait(for: 1)
        let shutdown = Task { await client.shutdown(gracePeriod: .seconds(5), clock: clock) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        // The grace period is over; shutdown now waits for the request itself.
        try await waitUntil { client.lifecycle.idleWaiterCount == 1 && clock.sleeperCount == 0 }
        #expect(client.lifecycle.inFlight == 1)

        gate.open()
        await Self.result(of: shutdown)
        #expect(try await Self.result(of: request).1.statusCode == 200)
        #expect(transport.cancellationCount == 0)
    }

    @Test("cancelling the task that awaits shutdown stops the wait but keeps the client shut")
    func cancelledShutdown() async throws {
        let client = Client(transport: MockTransport.held(by: gate, counting: arrived))
        let request = Task { try await client.send(URLRequest(url: Self.url)) }
        await arrived.wait(for: 1)
        let shutdown = Task { await client.shutdown() }
        try await waitUntil { client.lifecycle.idleWaiterCount == 1 }
        shutdown.cancel()
        await Self.result(of: shutdown)
        #expect(client.lifecycle.inFlight == 1)
        #expect(client.isShutDown)

        gate.open()
        #expect(try await Self.result(of: request).1.statusCode == 200)
    }

    @Test("a cancellable request behaves like any other until a shutdown cancels it")
    func cancellableRequestsOtherwiseNormal() async throws {
        let transport = MockTransport { request in
            if request.url?.lastPathComponent == "hang" {
                arrived.arrive()
                try await waitForCancellation()
            }
            return .ok
        }
        let client = Client(transport: transport)
        await client.update { $0.isCancellableOnShutdown = true }
        #expect(try await client.send(URLRequest(url: Self.url)).1.statusCode == 200)

        // The caller's own cancellation still reaches the transport and is reported as CancellationError.
        let hanging = URLRequest(url: Self.url.appendingPathComponent("hang"))
        await expectCancellation(sending: hanging, through: client, arrived: arrived)
        #expect(transport.cancellationCount == 1)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test(
        "a cancellable call's chain runs on ManualClock.run's executor, as a plain call's does",
        arguments: [false, true]
    )
    func cancellableChainKeepsTheRunsExecutor(cancellable: Bool) async throws {
        let clock = ManualClock()
        let seen = Locked<Bool?>(nil)
        let probe = Middleware { request, next in
            let preferred = withUnsafeCurrentTask { $0?.unownedTaskExecutor != nil }
            seen.withLock { $0 = preferred }
            return try await next(request)
        }
        let client = Client(
            configuration: .init(
                baseURL: exampleBaseURL,
                transport: MockTransport.ok,
                middleware: [probe],
                isCancellableOnShutdown: cancellable
            )
        )
        _ = try await clock.run { try await client.send(URLRequest(url: exampleBaseURL)) }
        #expect(seen.value == true)
    }
}
