import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that says it enforces every deadline and does so as `AsyncHTTPClientTransport` bounds a body
/// still arriving: it waits in a child task attached to the deadline's work (`TimeoutRunner.run(attachedTo:)`),
/// which the timeout's shared timer cancels. Records the task each request's `send` ran in.
private final class AttachingHangTransport: DeadlineEnforcingTransport {
    let tasks = Locked<[Int?]>([])

    func enforces(_ deadline: Deadline) -> Bool { true }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        tasks.withLock { $0.append(withUnsafeCurrentTask { $0?.hashValue }) }
        guard let deadline = Deadline.current else { throw CourierError(.invalidRequest, message: "no deadline") }
        return try await TimeoutRunner.run(attachedTo: deadline, request: request) { _ in
            try await Gate().waitUnlessCancelled()
            throw CancellationError()
        }
    }
}

/// A second reader's tests of `Request.timeout` on the client's shared timers (commit 94b327c): the paths the
/// commit's own tests leave out. Real clock, short timeouts only where a deadline must pass; nothing sleeps to
/// synchronize.
@Suite("A request's own timeout on the shared timer: review", .timeLimit(.minutes(1)))
struct RequestTimeoutReviewTests {
    private let base = URL(string: "https://api.example.test")

    @Test("under a nearer task-local Deadline, the call ends at that deadline and arms nothing in the timer")
    func nearerEnclosingDeadline() async throws {
        let holding = HoldingTransport()
        let client = Client(baseURL: base, transport: holding)
        let call = Task {
            // Nearer than 30 s, and long enough that the call reaches the transport before it on a loaded machine.
            try await Deadline.$current.withValue(Deadline(after: .seconds(5))) {
                let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(30)))
            }
        }
        await holding.waitUntilHolding(1)
        // The timer was asked for (a closed client asks too); its queue must stay empty: an entry 30 s away would
        // sit in front of every nearer one.
        let timer = try #require(client.requestTimeouts.timer(for: .seconds(30)))
        #expect(timer.pendingCount == 0)
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(5))
        #expect(error.timeoutScope == .call)
        #expect(timer.pendingCount == 0)
    }

    @Test("a timed request sent from another client's middleware: the nearer of the two deadlines bounds it")
    func nestedClients() async throws {
        let seen = Locked<[Duration?]>([])
        let inner = Client(
            baseURL: base,
            transport: MockTransport { _ in
                seen.withLock { $0.append(Deadline.current?.timeout) }
                return .hang
            }
        )
        let relay = Middleware(name: "relay") { request, next in
            let timeout: Duration = request.url?.path == "/short-inner" ? .seconds(2) : .seconds(30)
            let _: EmptyResponse = try await inner.send(.get("/inner", timeout: timeout))
            return try await next(request)
        }
        let outer = Client(baseURL: base, transport: MockTransport.ok, middleware: [relay])

        // The outer call's deadline (3 s) is nearer than the inner request's own (30 s): the inner chain runs
        // under the outer deadline, and the inner client's timer for 30 s gets no entry. (Seconds, not
        // milliseconds: both calls must reach the inner transport before their deadlines on a loaded machine.)
        let outerFirst = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await outer.send(.get("/long-inner", timeout: .seconds(3)))
        }
        #expect(outerFirst.code == .timedOut)
        #expect(outerFirst.timeout == .seconds(3))
        #expect(outerFirst.timeoutScope == .call)

        // The inner request's own deadline (2 s) is nearer than the outer call's (30 s).
        let innerFirst = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await outer.send(.get("/short-inner", timeout: .seconds(30)))
        }
        #expect(innerFirst.code == .timedOut)
        #expect(innerFirst.timeout == .seconds(2))
        #expect(innerFirst.middleware == "relay")
        #expect(seen.withLock { $0 } == [.seconds(3), .seconds(2)])
        // The outer call's work ended with it; nothing waits in its timer.
        #expect(outer.requestTimeouts.timer(for: .seconds(30))?.pendingCount == 0)
    }

    @Test("a retry inside the request's timeout: the error counts every attempt the call made")
    func attemptsThroughRetry() async throws {
        let calls = Locked(0)
        let transport = MockTransport { _ in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return call == 1 ? .serviceUnavailable() : .hang
        }
        var policy = RetryPolicy.default
        policy.backoff = .immediate
        let client = Client(baseURL: base, transport: transport, middleware: [.retry(policy)])
        let error = try await #require(throws: CourierError.self) {
            // Long enough for both attempts to start on a loaded machine; the second hangs until the deadline.
            let _: EmptyResponse = try await client.send(.get("/flaky", timeout: .seconds(5)))
        }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(5))
        #expect(error.timeoutScope == .call)
        #expect(error.attempts == 2)
        #expect(error.middleware == nil)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test("over a transport that enforces deadlines, a hung call ends at its own deadline, run in the caller's task")
    func enforcedHungCall() async throws {
        let transport = AttachingHangTransport()
        let client = Client(baseURL: base, transport: transport, middleware: [.retry(.default)])
        let clock = ContinuousClock()
        let start = clock.now
        let error = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/hung", timeout: .milliseconds(200)))
        }
        #expect(clock.now - start >= .milliseconds(200))
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(200))
        #expect(error.timeoutScope == .call)
        // Reported as the call's own timeout, not as an enclosing deadline the transport ran into.
        #expect(error.message.contains("whole-call timeout"), "\(error.message)")
        #expect(error.attempts == 1)
        #expect(error.middleware == nil)
        #expect(transport.tasks.withLock { $0 } == [withUnsafeCurrentTask { $0?.hashValue }])
        #expect(client.requestTimeouts.timer(for: .milliseconds(200))?.pendingCount == 0)
    }

    @Test("a closed client refuses a timed call with clientShutDown and counts nothing in flight")
    func closedClientRefuses() async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: base, transport: transport)
        await client.shutdown()
        let error = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(30)))
        }
        #expect(error.code == .clientShutDown)
        #expect(transport.requests.isEmpty)
        #expect(client.lifecycle.inFlight == 0)
        #expect(client.requestTimeouts.timer(for: .seconds(30))?.pendingCount == 0)
    }

    @Test("a closed client under a deadline that has passed refuses a timed call the same way, whatever its duration")
    func closedClientUnderPassedDeadline() async throws {
        let client = Client(baseURL: base, transport: MockTransport.ok)
        // Give the client its 16 timers while it is open; a 17th duration then takes the per-call race.
        for index in 0..<RequestTimeouts.limit {
            let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(10 + index)))
        }
        #expect(client.requestTimeouts.durations.count == RequestTimeouts.limit)
        await client.shutdown()
        let passed = Deadline(after: .seconds(-1))
        let onTimer = try await #require(throws: CourierError.self) {
            try await Deadline.$current.withValue(passed) {
                let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(10)))
            }
        }
        let pastLimit = try await #require(throws: CourierError.self) {
            try await Deadline.$current.withValue(passed) {
                let _: EmptyResponse = try await client.send(.get("/a", timeout: .seconds(60)))
            }
        }
        // The timer path refuses first (clientShutDown, as a call without a timeout gets); the race past the
        // limit reports the passed deadline first (timedOut).
        #expect(onTimer.code == pastLimit.code, "on a timer: \(onTimer.code); past the limit: \(pastLimit.code)")
    }

    @Test("a shutdown waits for a timed call in flight and returns once its deadline has ended it")
    func shutdownWaitsForTimedCall() async throws {
        let holding = HoldingTransport()
        let client = Client(baseURL: base, transport: holding)
        let call = Task {
            // Long enough that the call is held (and counted) before its deadline on a loaded machine.
            let _: EmptyResponse = try await client.send(.get("/held", timeout: .seconds(5)))
        }
        await holding.waitUntilHolding(1)
        #expect(client.lifecycle.inFlight == 1)
        await client.shutdown()
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(client.lifecycle.inFlight == 0)
    }
}
