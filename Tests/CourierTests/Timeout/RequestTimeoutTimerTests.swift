import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that says it enforces every deadline and answers at once, recording the task each request ran in
/// and the deadline it saw.
private final class AnsweringEnforcingTransport: DeadlineEnforcingTransport {
    struct Seen: Equatable, Sendable {
        let task: Int?
        let timeout: Duration?
    }

    let seen = Locked<[Seen]>([])

    func enforces(_ deadline: Deadline) -> Bool { true }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        seen.withLock { $0.append(Seen(task: currentTaskID(), timeout: Deadline.current?.timeout)) }
        return (Data(), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!)
    }
}

/// Answers every path at once but `/slow`, which it holds until cancelled.
private struct SlowPathTransport: Transport {
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        if request.url?.path == "/slow" {
            try await Gate().waitUnlessCancelled()
            throw CancellationError()
        }
        return (Data(), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!)
    }
}

/// The identity of the task that calls it.
private func currentTaskID() -> Int? {
    withUnsafeCurrentTask { $0?.hashValue }
}

/// `Request.timeout` on the client's shared timers (`RequestTimeouts`): one timer per duration, as a timeout
/// middleware has one, instead of a sleeping child task per call. Real clock (the request's deadline is a
/// `ContinuousClock` one), short timeouts only where a deadline must pass; nothing sleeps to synchronize.
@Suite("A request's own timeout on the client's shared timer", .timeLimit(.minutes(1)))
struct RequestTimeoutTimerTests {
    private let base = URL(string: "https://api.example.test")

    @Test("requests with one timeout share the client's timer for it, one deadline armed per call in flight")
    func sharedTimer() async throws {
        let holding = HoldingTransport()
        let client = Client(baseURL: base, transport: holding)
        let calls = (0..<3).map { _ in
            Task {
                let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(30)))
            }
        }
        await holding.waitUntilHolding(3)
        // Read before asking for the timer, which would make one.
        try #require(client.requestTimeouts.durations == [.seconds(30)])
        let timer = try #require(client.requestTimeouts.timer(for: .seconds(30)))
        // The deadline is armed right after the call's task first suspends, so it may trail the transport's hold.
        try await waitUntil { timer.pendingCount == 3 }
        #expect(timer.driverIsRunning)
        #expect(holding.releaseAll() == 3)
        for call in calls { try await call.join() }
        #expect(timer.pendingCount == 0)
        holding.open()
        let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(5)))
        #expect(client.requestTimeouts.durations == [.seconds(30), .seconds(5)])
    }

    @Test("over a transport that enforces deadlines, the chain runs in the caller's own task, under the deadline")
    func callerTaskOverEnforcingTransport() async throws {
        let transport = AnsweringEnforcingTransport()
        let client = Client(baseURL: base, transport: transport, middleware: [.retry(.default)])
        let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(30)))
        #expect(transport.seen.withLock { $0 } == [.init(task: currentTaskID(), timeout: .seconds(30))])
    }

    @Test("a layer that may wait past the deadline puts the chain in a child task the timer can cancel")
    func childTaskBelowUnboundedLayer() async throws {
        let transport = AnsweringEnforcingTransport()
        let own = Middleware(name: "own") { request, next in try await next(request) }
        let client = Client(baseURL: base, transport: transport, middleware: [own])
        let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(30)))
        let seen = try #require(transport.seen.withLock { $0.first })
        #expect(seen.timeout == .seconds(30))
        #expect(seen.task != currentTaskID())
    }

    @Test(
        "a hung call fails with its own timeout, on a shared timer and past the timers' limit alike",
        arguments: [false, true]
    )
    func hungCallTimesOut(pastLimit: Bool) async throws {
        let client = Client(baseURL: base, transport: SlowPathTransport())
        // Fill the timers (all but one, or all) with long durations, answered at once.
        let filled = pastLimit ? RequestTimeouts.limit : RequestTimeouts.limit - 1
        for seconds in 0..<filled {
            let _: EmptyResponse = try await client.send(.get("/fast", timeout: .seconds(60 + seconds)))
        }
        let error = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/slow", timeout: .milliseconds(50)))
        }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(50))
        #expect(error.timeoutScope == .call)
        #expect(error.attempts == 1)
        #expect(error.redactedURL == "https://api.example.test/slow")
        #expect(client.requestTimeouts.durations.count == RequestTimeouts.limit)
        #expect(client.requestTimeouts.durations.contains(.milliseconds(50)) == !pastLimit)
    }

    @Test("a timeout of zero or less fails at once, without a timer", arguments: [Duration.zero, .seconds(-1)])
    func nonPositive(timeout: Duration) async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: base, transport: transport)
        let error = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/a", timeout: timeout))
        }
        #expect(error.code == .timedOut)
        #expect(transport.requests.isEmpty)
        #expect(client.requestTimeouts.durations.isEmpty)
    }

    @Test("the caller's cancellation ends a timed call with CancellationError and leaves no deadline armed")
    func callerCancellation() async throws {
        let holding = HoldingTransport()
        let client = Client(baseURL: base, transport: holding)
        let call = Task {
            let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(30)))
        }
        await holding.waitUntilHolding(1)
        let timer = try #require(client.requestTimeouts.timer(for: .seconds(30)))
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(timer.pendingCount == 0)
    }

    @Test("on a client that cancels on shutdown, a timed call ends with clientShutDown when the grace period ends")
    func cancellableOnShutdown() async throws {
        let holding = HoldingTransport()
        let client = Client(
            configuration: Client.Configuration(baseURL: base, transport: holding, isCancellableOnShutdown: true)
        )
        let _: EmptyResponse = try await {
            holding.open()
            defer { holding.close() }
            return try await client.send(.get("/answered", timeout: .seconds(30)))
        }()
        let call = Task {
            let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(30)))
        }
        await holding.waitUntilHolding(1)
        await client.shutdown(gracePeriod: .zero)
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .clientShutDown)
        #expect(client.requestTimeouts.timer(for: .seconds(30))?.pendingCount == 0)
    }
}
