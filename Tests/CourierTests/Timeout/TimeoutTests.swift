import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The two ways a timeout enforces its deadline, both driven by a `ManualClock` here: a timer task per request
/// (what every clock but `ContinuousClock` gets) and one driver task for the whole middleware (what
/// `ContinuousClock` gets; see `DeadlineTimerTests` for what only it does).
enum TimerKind: CaseIterable, CustomTestStringConvertible {
    case perRequest
    case shared

    var testDescription: String {
        switch self {
        case .perRequest: "a timer per request"
        case .shared: "one shared timer"
        }
    }

    func timeout(_ duration: Duration, clock: ManualClock) -> Middleware {
        switch self {
        case .perRequest: .timeout(duration, clock: clock)
        case .shared: .timeout(duration, timer: DeadlineTimer(clock: clock))
        }
    }

    /// How many tasks still sleep on the clock once a call through `timeouts` timeout middleware has
    /// ended before their deadlines: a shared timer's driver sleeps on until its deadline.
    func sleepersLeft(timeouts: Int) -> Int {
        self == .shared ? timeouts : 0
    }
}

@Suite("Timeout", .timeLimit(.minutes(1)))
struct TimeoutTests {
    private let clock = ManualClock()
    private let hanging = MockTransport(.hang)

    /// Starts a request through `kind`'s timeouts of `durations`, outermost first, over a transport that hangs
    /// until cancelled, and returns once every timer sleeps.
    private func sendHanging(
        _ kind: TimerKind,
        timeouts durations: Duration...
    ) async -> Task<(Data, HTTPURLResponse), any Error> {
        let client = Client(transport: hanging, middleware: durations.map { kind.timeout($0, clock: clock) })
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: durations.count)
        return task
    }

    @Test(
        "at the deadline the transport call is cancelled and the caller gets timedOut with the duration",
        arguments: TimerKind.allCases
    )
    func cancelsTransport(kind: TimerKind) async throws {
        let task = await sendHanging(kind, timeouts: .milliseconds(100))
        #expect(hanging.callCount == 1)
        clock.advance(by: .milliseconds(99))
        #expect(hanging.cancellationCount == 0)
        clock.advance(by: .milliseconds(1))
        let error = await RetryFixtures.expectTimedOut(task, after: .milliseconds(100), on: clock)
        #expect(error?.method == "GET")
        #expect(hanging.cancellationCount == 1)
    }

    @Test("a response before the deadline is returned and the timer is disarmed")
    func responseInTime() async throws {
        try await RetryFixtures.expectAnsweredInTime(through: .timeout(.seconds(1), clock: clock), on: clock)
        #expect(clock.sleeperCount == 0)
    }

    @Test("a call that completes without suspending arms no timer", arguments: TimerKind.allCases)
    func fastPath(kind: TimerKind) async throws {
        let client = Client(transport: MockTransport.ok, middleware: [kind.timeout(.seconds(1), clock: clock)])
        for _ in 0..<10 {
            let (_, response) = try await client.send(RetryFixtures.request())
            #expect(response.statusCode == 200)
        }
        #expect(clock.totalSleeps == 0)
    }

    @Test(
        "cancelling the caller throws CancellationError, not a timeout, and cancels the transport",
        arguments: TimerKind.allCases
    )
    func callerCancellation(kind: TimerKind) async throws {
        let task = await sendHanging(kind, timeouts: .seconds(1))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(hanging.cancellationCount == 1)
        #expect(clock.sleeperCount == kind.sleepersLeft(timeouts: 1))
    }

    @Test("errors from the rest of the chain pass through unchanged", arguments: TimerKind.allCases)
    func errorsPassThrough(kind: TimerKind) async throws {
        let client = Client(
            transport: MockTransport(.failure(URLError(.cannotConnectToHost))),
            middleware: [kind.timeout(.seconds(1), clock: clock)]
        )
        let error = await #expect(throws: CourierError.self) { try await client.send(RetryFixtures.request()) }
        #expect(error?.code == .transport)
        #expect((error?.underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test(
        "an inner timedOut that reaches the timeout after its deadline is reported as this timeout, though its timer has not run",
        arguments: TimerKind.allCases
    )
    func innerTimeoutAfterDeadline(kind: TimerKind) async throws {
        let error = try await Self.errorAfterStalledDeadline(kind) { request in
            var inner = CourierError(.timedOut, message: "an inner timeout", request: request)
            inner.timeout = .milliseconds(500)
            return inner
        }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(1))
        #expect(error.middleware == "timeout")
    }

    @Test(
        "any other error that reaches the timeout after its deadline passes through as it is",
        arguments: TimerKind.allCases
    )
    func otherErrorAfterDeadline(kind: TimerKind) async throws {
        let error = try await Self.errorAfterStalledDeadline(kind) { _ in URLError(.networkConnectionLost) }
        #expect(error.code == .transport)
        #expect((error.underlying as? URLError)?.code == .networkConnectionLost)
    }

    /// Sends through `kind`'s timeout of 1 s on a ``StalledClock``, over a transport that waits until the
    /// timeout's timer is asleep, moves the clock 2 s on and throws `failure(request)`: an error that comes after
    /// the deadline, before the timer has run.
    private static func errorAfterStalledDeadline(
        _ kind: TimerKind,
        failure: @escaping @Sendable (URLRequest) -> any Error
    ) async throws -> CourierError {
        let stalled = StalledClock()
        let timeout: Middleware =
            switch kind {
            case .perRequest: .timeout(.seconds(1), clock: stalled)
            case .shared: .timeout(.seconds(1), timer: DeadlineTimer(clock: stalled))
            }
        let transport = MockTransport { request in
            await stalled.sleeps.wait(for: 1)
            stalled.advance(by: .seconds(2))
            throw failure(request.urlRequest)
        }
        let client = Client(transport: transport, middleware: [timeout])
        return try await #require(throws: CourierError.self) { try await client.send(RetryFixtures.request()) }
    }

    @Test("layers inside see the deadline and the time left; outside there is none", arguments: TimerKind.allCases)
    func deadlineVisible(kind: TimerKind) async throws {
        let seen = Locked<[Duration]>([])
        let outside = Locked<Bool?>(nil)
        let client = Client(
            transport: MockTransport.ok,
            middleware: [
                Middleware { request, next in
                    outside.withLock { $0 = Deadline.current != nil }
                    return try await next(request)
                },
                kind.timeout(.milliseconds(300), clock: clock),
                Middleware { request, next in
                    if let deadline = Deadline.current {
                        seen.withLock { $0 += [deadline.timeLeft, deadline.timeout] }
                    }
                    return try await next(request)
                },
            ]
        )
        _ = try await client.send(RetryFixtures.request())
        #expect(seen.value == [.milliseconds(300), .milliseconds(300)])
        #expect(outside.value == false)
    }

    @Test(
        "an inner timeout waits only for the time left of an outer deadline, and reports the outer timeout",
        arguments: TimerKind.allCases
    )
    func innerUsesTimeLeft(kind: TimerKind) async throws {
        let task = await sendHanging(kind, timeouts: .milliseconds(150), .seconds(1))
        #expect(clock.pendingDeadlines == Array(repeating: ManualClock.Instant(offset: .milliseconds(150)), count: 2))
        clock.advanceToNextDeadline()
        await RetryFixtures.expectTimedOut(task, after: .milliseconds(150), on: clock)
        #expect(hanging.cancellationCount == 1)
    }

    @Test("an inner timeout shorter than the time left fires on its own", arguments: TimerKind.allCases)
    func innerShorter(kind: TimerKind) async throws {
        let task = await sendHanging(kind, timeouts: .seconds(1), .milliseconds(100))
        clock.advanceToNextDeadline()
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.timeout == .milliseconds(100))
        #expect(clock.now.offset == .milliseconds(100))
        #expect(clock.sleeperCount == kind.sleepersLeft(timeouts: 1))
    }

    @Test("a deadline set by the caller bounds the timeouts inside", arguments: TimerKind.allCases)
    func callerDeadline(kind: TimerKind) async throws {
        let transport = MockTransport(.hang)
        let client = Client(transport: transport, middleware: [kind.timeout(.seconds(10), clock: clock)])
        let task = Task {
            try await Deadline.$current.withValue(Deadline(after: .milliseconds(50), clock: clock)) {
                try await client.send(RetryFixtures.request())
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .milliseconds(50))])
        clock.advanceToNextDeadline()
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.timeout == .milliseconds(50))
    }

    @Test(
        "when the deadline has already passed, the call fails at once and nothing is sent",
        arguments: TimerKind.allCases
    )
    func passedDeadline(kind: TimerKind) async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [kind.timeout(.seconds(10), clock: clock)])
        let deadline = Deadline(after: .seconds(1), clock: clock)
        clock.advance(by: .seconds(2))
        #expect(deadline.hasPassed)
        let error = await #expect(throws: CourierError.self) {
            try await Deadline.$current.withValue(deadline) { try await client.send(RetryFixtures.request()) }
        }
        #expect(error?.code == .timedOut)
        #expect(transport.callCount == 0)
    }

    @Test("work run outside the deadline with withValue(nil) is not bounded by it", arguments: TimerKind.allCases)
    func clearingTheDeadline(kind: TimerKind) async throws {
        let seen = Locked<[Bool]>([])
        let client = Client(
            transport: MockTransport.ok,
            middleware: [
                kind.timeout(.seconds(1), clock: clock),
                Middleware { request, next in
                    seen.withLock { $0.append(Deadline.current != nil) }
                    Deadline.$current.withValue(nil) { seen.withLock { $0.append(Deadline.current != nil) } }
                    return try await next(request)
                },
            ]
        )
        _ = try await client.send(RetryFixtures.request())
        #expect(seen.value == [true, false])
    }
}
