import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Retry within a deadline", .timeLimit(.minutes(1)))
struct DeadlinePropagationTests {
    private let clock = ManualClock()

    /// A client with a whole-call timeout of `timeout` over a retry with `policy`, both on the suite's clock.
    private func retryingClient(
        _ transport: MockTransport,
        within timeout: Duration,
        retrying policy: RetryPolicy
    ) -> Client {
        Client(transport: transport, middleware: [.timeout(timeout, clock: clock), .retry(policy, clock: clock)])
    }

    @Test("a whole-call timeout of 250 ms over five per-attempt timeouts of 100 ms fails at 250 ms, not 500")
    func wholeCallOverPerAttemptTimeouts() async throws {
        let transport = MockTransport(.hang)
        let attempts = Locked<[Int]>([])
        let client = Client(
            transport: transport,
            middleware: [
                .timeout(.milliseconds(250), clock: clock),
                .retry(RetryFixtures.policy(attempts: 5), clock: clock),
                RetryFixtures.recordingAttempts(into: attempts),
                .timeout(.milliseconds(100), clock: clock),
            ]
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        // The whole-call timer and the attempt's timer are armed; each step ends one attempt.
        await clock.advanceThroughDeadlines(3, sleepers: 2)
        let error = await RetryFixtures.expectTimedOut(task, after: .milliseconds(250), on: clock)
        // As the Resilience article's manual-clock example says: the whole call's timeout, after 3 attempts.
        #expect(error?.timeoutScope == .call)
        #expect(error?.attempts == 3)
        #expect(error?.elapsed == .milliseconds(250))
        #expect(attempts.value == [1, 2, 3])
        #expect(transport.callCount == 3)
        #expect(transport.cancellationCount == 3)
        #expect(clock.sleeperCount == 0)
    }

    @Test("a whole-call timeout of 250 ms over attempts that each take 100 ms fails at 250 ms")
    func wholeCallOverSlowAttempts() async throws {
        let transport = MockTransport { _ in
            try await clock.sleep(for: .milliseconds(100))
            return .status(503)
        }
        let client = retryingClient(transport, within: .milliseconds(250), retrying: RetryFixtures.policy(attempts: 5))
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.advanceThroughDeadlines(3, sleepers: 2)
        await RetryFixtures.expectTimedOut(task, after: .milliseconds(250), on: clock)
        #expect(transport.callCount == 3)
        #expect(transport.cancellationCount == 1)
    }

    @Test(
        "a retry that finds no time left after an attempt timed out reports the whole-call timeout, however late the whole call's timer runs"
    )
    func wholeCallReportedWhenRetryGivesUp() async throws {
        // Each attempt hangs for 1.3 s, and its own 1-second timeout (on the suite's clock) cuts it. The second
        // ends past the whole call's 2.5 s, and the retry finds no time left. The whole call's timer never runs
        // (a busy machine): only its clock says the call ran out of time.
        let stalled = StalledClock()
        let transport = MockTransport { _ in
            await stalled.sleeps.wait(for: 1)
            stalled.advance(by: .milliseconds(1_300))
            clock.advance(by: .milliseconds(1_300))
            return .hang
        }
        let client = Client(
            transport: transport,
            middleware: [
                .timeout(.milliseconds(2_500), clock: stalled),
                .retry(RetryFixtures.policy(attempts: 10), clock: clock),
                .timeout(.seconds(1), clock: clock),
            ]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(RetryFixtures.request()) }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(2_500))
        #expect(transport.callCount == 2)
        #expect(transport.cancellationCount == 2)
    }

    @Test("the retry does not sleep past the deadline: it returns the last response at once")
    func noSleepPastDeadline() async throws {
        let transport = MockTransport(.status(503))
        let client = retryingClient(
            transport,
            within: .seconds(1),
            retrying: RetryFixtures.policy(backoff: .constant(.seconds(2)))
        )
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
        #expect(clock.now.offset == .zero)
        #expect(clock.pendingDeadlines.isEmpty)
    }

    @Test("the retry does not sleep past the deadline: it rethrows the last error at once")
    func noSleepPastDeadlineError() async throws {
        let transport = MockTransport(.failure(URLError(.networkConnectionLost)))
        let client = retryingClient(
            transport,
            within: .seconds(1),
            retrying: RetryFixtures.policy(backoff: .constant(.milliseconds(600)))
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        // First retry: 600 ms fits in the second left. Second retry: 600 ms would end at 1.2 s.
        await clock.waitForSleepers(count: 2)  // the whole-call timer and the backoff
        clock.advance(by: .milliseconds(600))
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.code == .transport)
        #expect(transport.callCount == 2)
        #expect(clock.now.offset == .milliseconds(600))
    }

    @Test("a Retry-After that would end after the deadline is not waited for")
    func retryAfterPastDeadline() async throws {
        let transport = MockTransport(.status(429, headers: ["Retry-After": "5"]))
        let client = retryingClient(transport, within: .seconds(2), retrying: RetryFixtures.policy())
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 429)
        #expect(transport.callCount == 1)
    }

    @Test("backoff that ends before the deadline is slept as usual")
    func backoffWithinDeadline() async throws {
        let transport = MockTransport(.status(503), then: .status(503), .ok)
        let client = retryingClient(
            transport,
            within: .seconds(1),
            retrying: RetryFixtures.policy(backoff: .constant(.milliseconds(300)))
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.advanceThroughDeadlines(2, sleepers: 2)  // the whole-call timer and the backoff
        let (_, response) = try await task.join()
        #expect(response.statusCode == 200)
        #expect(clock.now.offset == .milliseconds(600))
        #expect(transport.callCount == 3)
    }
}
