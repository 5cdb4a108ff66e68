import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Sun, 06 Nov 1994 08:49:37 GMT`, the example date of RFC 9110, in seconds since 1970.
private let rfcExample: TimeInterval = 784_111_777

@Suite("Retry-After parsing")
struct RetryAfterParsingTests {
    @Test("delay-seconds", arguments: [("2", 2), ("0", 0), ("  7 ", 7), ("120", 120), ("0003", 3)])
    func seconds(value: String, seconds: Int) {
        #expect(RetryAfter.delay(value, now: Date()) == .seconds(seconds))
    }

    @Test(
        "the three HTTP-date forms",
        arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"]
    )
    func httpDates(value: String) {
        let now = Date(timeIntervalSince1970: rfcExample - 5)
        #expect(RetryAfter.delay(value, now: now) == .seconds(5))
    }

    @Test("a date in the past means no delay")
    func pastDate() {
        let now = Date(timeIntervalSince1970: rfcExample + 60)
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
    }

    @Test("a two-digit year more than 50 years ahead is in the past century")
    func twoDigitYears() throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
        // 2030 is near: a date then is in the future.
        let soon = try #require(RetryAfter.delay("Tuesday, 01-Jan-30 00:00:00 GMT", now: now))
        #expect(soon == .seconds(126_230_400))  // 2030-01-01 − 2026-01-01
        // 2080 would be more than 50 years ahead, so it is 1980: in the past.
        #expect(RetryAfter.delay("Tuesday, 01-Jan-80 00:00:00 GMT", now: now) == .zero)
    }

    @Test(
        "values that are neither form are ignored",
        arguments: [
            "", "   ", "-1", "1.5", "soon", "2 s", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 6 Nov 19945 08:49:37 GMT",
        ]
    )
    func invalid(value: String) {
        #expect(RetryAfter.delay(value, now: Date(timeIntervalSince1970: rfcExample)) == nil)
    }

    @Test("leap days are valid in leap years only")
    func leapDays() {
        let now = Date(timeIntervalSince1970: 0)
        #expect(RetryAfter.delay("Thu, 29 Feb 2024 00:00:00 GMT", now: now) != nil)
        #expect(RetryAfter.delay("Wed, 29 Feb 2023 00:00:00 GMT", now: now) == nil)
        #expect(RetryAfter.delay("Tue, 29 Feb 2000 00:00:00 GMT", now: now) != nil)
        #expect(RetryAfter.delay("Thu, 29 Feb 1900 00:00:00 GMT", now: now) == nil)
    }

    @Test("calendar arithmetic matches Foundation's")
    func calendar() {
        #expect(RetryAfter.daysSince1970(year: 1970, month: 1, day: 1) == 0)
        #expect(
            RetryAfter.daysSince1970(year: 1994, month: 11, day: 6) * 86_400 + 8 * 3_600 + 49 * 60 + 37 == 784_111_777
        )
        #expect(RetryAfter.civilYear(daysSince1970: 0) == 1970)
        #expect(RetryAfter.civilYear(daysSince1970: 20_453) == 2025)  // 2025-12-31
        #expect(RetryAfter.civilYear(daysSince1970: 20_454) == 2026)  // 2026-01-01
    }

    @Test("a huge number of seconds stays representable and above any cap")
    func huge() throws {
        let delay = try #require(RetryAfter.delay("99999999999999999999999", now: Date()))
        #expect(delay > .seconds(60 * 60 * 24 * 365 * 1000))
    }
}

@Suite("Retry-After in the retry", .timeLimit(.minutes(1)))
struct RetryAfterTests {
    private let clock = ManualClock()

    /// Sends a request answered first with `status` and `Retry-After: retryAfter`, then with 200, through
    /// `.retry(policy)`; expects the retry to sleep exactly `wait` before the second attempt, which succeeds.
    @discardableResult
    private func expectRetryWaits(
        _ wait: Duration,
        after status: Int,
        retryAfter: String,
        policy: RetryPolicy = RetryFixtures.policy(backoff: .constant(.milliseconds(100))),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> MockTransport {
        let transport = MockTransport(.status(status, headers: ["Retry-After": retryAfter]), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: wait)], sourceLocation: sourceLocation)
        clock.advance(by: wait)
        #expect(try await task.join().1.statusCode == 200, sourceLocation: sourceLocation)
        return transport
    }

    @Test("Retry-After: 2 on a 429 or a 503 makes the retry wait 2 seconds", arguments: [429, 503])
    func secondsHonoured(status: Int) async throws {
        let events = Locked<[RetryEvent]>([])
        let policy = RetryFixtures.policy(backoff: .constant(.milliseconds(100))) { event in
            events.withLock { $0.append(event) }
        }
        let transport = try await expectRetryWaits(.seconds(2), after: status, retryAfter: "2", policy: policy)
        #expect(transport.callCount == 2)
        #expect(events.value.map(\.retryAfter) == [.seconds(2)])
        #expect(events.value.map(\.delay) == [.seconds(2)])
    }

    @Test("an HTTP-date Retry-After is measured from the injected wall clock")
    func dateHonoured() async throws {
        var policy = RetryFixtures.policy(backoff: .constant(.milliseconds(100)))
        policy.currentDate = { Date(timeIntervalSince1970: rfcExample - 3) }
        try await expectRetryWaits(.seconds(3), after: 503, retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT", policy: policy)
    }

    @Test("a Retry-After above the cap returns the response at once instead of waiting")
    func aboveCap() async throws {
        let transport = MockTransport(.status(503, headers: ["Retry-After": "120"]), then: .ok)
        let events = Locked<[RetryEvent]>([])
        let policy = RetryFixtures.policy { event in events.withLock { $0.append(event) } }
        #expect(policy.maximumRetryAfter == .seconds(60))
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 503)
        #expect(response.value(forHTTPHeaderField: "Retry-After") == "120")
        #expect(transport.callCount == 1)
        #expect(clock.totalSleeps == 0)
        #expect(events.value.isEmpty)
    }

    @Test("a Retry-After at the cap is honoured, and the cap is configurable")
    func atCap() async throws {
        var policy = RetryFixtures.policy()
        policy.maximumRetryAfter = .seconds(5)
        try await expectRetryWaits(.seconds(5), after: 429, retryAfter: "5", policy: policy)
    }

    @Test("Retry-After carried by a validation layer's error is honoured, and above the cap rethrown")
    func fromValidationError() async throws {
        let transport = MockTransport(
            .status(503, headers: ["retry-after": "4"]),
            then: .status(503, headers: ["Retry-After": "600"]),
            .ok
        )
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryFixtures.policy(), clock: clock), .validatingStatus()]
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(4))])
        clock.advance(by: .seconds(4))
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.statusCode == 503)
        #expect(transport.callCount == 2)
    }

    @Test("Retry-After on other statuses is ignored: the backoff applies")
    func otherStatuses() async throws {
        try await expectRetryWaits(.milliseconds(100), after: 500, retryAfter: "30")
    }

    @Test("an unreadable Retry-After falls back to the backoff")
    func unreadable() async throws {
        try await expectRetryWaits(.milliseconds(100), after: 503, retryAfter: "later")
    }
}
