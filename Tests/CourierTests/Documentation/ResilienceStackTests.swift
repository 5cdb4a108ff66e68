import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The documented order, outermost first: timeout (whole call) → retry → authentication → timeout (per
/// attempt) → status validation → transport, with the built-in `.authenticating(token:)` and
/// `.validatingStatus()`. Counting and logging sit outside and are not involved here.
@Suite("Retry and timeout in the documented order", .timeLimit(.minutes(1)))
struct ResilienceStackTests {
    private static func stack(clock: ManualClock, attempts: Locked<[Int]>) -> [Middleware] {
        [
            .timeout(.seconds(1), clock: clock),
            .idempotencyKey(),
            .retry(RetryFixtures.policy(backoff: .constant(.milliseconds(50))), clock: clock),
            RetryFixtures.recordingAttempts(into: attempts),
            .authenticating(token: "secret-token"),
            .timeout(.milliseconds(100), clock: clock),
            .validatingStatus(),
        ]
    }

    @Test("a hung attempt and a 503 are retried, each attempt authenticated, and the third succeeds")
    func recovers() async throws {
        let clock = ManualClock()
        let attempts = Locked<[Int]>([])
        let transport = MockTransport(.hang, then: .status(503), .ok)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: Self.stack(clock: clock, attempts: attempts)
        )
        let task = Task { try await client.send(RetryFixtures.request("POST")) }

        // Attempt 1 hangs: the per-attempt timeout ends it at 100 ms (the whole-call timer is armed too).
        await clock.waitForSleepers(count: 2)
        clock.advanceToNextDeadline()
        // The backoff before attempt 2 (50 ms); attempt 2 gets a 503, which the validator throws.
        await clock.waitForSleepers(count: 2)
        clock.advanceToNextDeadline()
        // The backoff before attempt 3; attempt 3 succeeds.
        await clock.waitForSleepers(count: 2)
        clock.advanceToNextDeadline()

        let (_, response) = try await task.join()
        #expect(response.statusCode == 200)
        #expect(clock.now.offset == .milliseconds(200))
        #expect(attempts.value == [1, 2, 3])
        #expect(transport.cancellationCount == 1)
        let sent = transport.requests
        #expect(sent.count == 3)
        #expect(sent.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "Bearer secret-token" })
        let keys = Set(sent.map { $0.value(forHTTPHeaderField: "Idempotency-Key") })
        #expect(keys.count == 1)
        #expect(keys.first ?? nil != nil)
        #expect(clock.sleeperCount == 0)
    }

    @Test("when every attempt fails, the validator's error for the last attempt reaches the caller")
    func exhausted() async throws {
        let clock = ManualClock()
        let attempts = Locked<[Int]>([])
        let transport = MockTransport(.status(502))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: Self.stack(clock: clock, attempts: attempts)
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.advanceThroughDeadlines(2, sleepers: 2)
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.statusCode == 502)
        #expect(error?.middleware == "validatingStatus")
        #expect(attempts.value == [1, 2, 3])
        #expect(!(error?.description.contains("secret-token") ?? true))
    }

    @Test("the whole-call timeout ends the retries when the attempts keep hanging")
    func wholeCallBound() async throws {
        let clock = ManualClock()
        let attempts = Locked<[Int]>([])
        let transport = MockTransport(.hang)
        var middleware = Self.stack(clock: clock, attempts: attempts)
        middleware[0] = .timeout(.milliseconds(180), clock: clock)
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: middleware)
        let task = Task { try await client.send(RetryFixtures.request()) }
        // Attempt 1 times out at 100 ms, the backoff ends at 150 ms, attempt 2 is cut at 180 ms.
        await clock.advanceThroughDeadlines(3, sleepers: 2)
        await RetryFixtures.expectTimedOut(task, after: .milliseconds(180), on: clock)
        #expect(attempts.value == [1, 2])
        #expect(transport.cancellationCount == 2)
    }
}
