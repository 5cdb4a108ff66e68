import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The final error of a call tells its story: how many attempts, how long, which timeout. Everything runs on a
/// manual clock, so every figure is exact; the descriptions are the ones the Resilience article and
/// `CourierError.description` show.
@Suite("Errors that tell the story", .timeLimit(.minutes(1)))
struct CallStoryTests {
    private let clock = ManualClock()

    /// Three attempts, 200 ms apart.
    private var policy: RetryPolicy {
        RetryFixtures.policy(attempts: 3, backoff: .constant(.milliseconds(200)))
    }

    /// The recommended stack's resilience layers on the suite's clock: whole-call timeout, retry, per-attempt
    /// timeout, status validation.
    private func stack(call: Duration = .seconds(10), attempt: Duration = .seconds(2)) -> [Middleware] {
        [
            .timeout(call, clock: clock),
            .retry(policy, clock: clock),
            .timeout(attempt, clock: clock),
            .validatingStatus(),
        ]
    }

    private func failure(
        of client: Client,
        _ request: URLRequest = RetryFixtures.request()
    ) async throws -> CourierError {
        let clock = self.clock
        let error = await #expect(throws: CourierError.self) {
            try await clock.run { _ = try await client.send(request) }
        }
        return try #require(error)
    }

    @Test("503, 503, 503 under .retry: the error is the last 503, after 3 attempts over 6.4 s")
    func threeUnavailable() async throws {
        let transport = MockTransport(.status(503).delayed(by: .seconds(2), on: clock))
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock), .validatingStatus()])

        let error = try await failure(of: client)

        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == 503)
        #expect(error.middleware == "validatingStatus")
        #expect(error.attempts == 3)
        #expect(error.elapsed == .milliseconds(6_400))
        #expect(error.message == "the status 503 is not acceptable (expected 200..<300)")
        #expect(
            error.description
                == "CourierError.unacceptableStatus: GET https://api.example.test/items → 503: after 3 attempts over "
                + "6.4 s: the status 503 is not acceptable (expected 200..<300) [middleware: validatingStatus]"
        )
        #expect(transport.callCount == 3)
    }

    @Test("an error the retry does not retry tells no story in its description, but counts its one attempt")
    func oneAttempt() async throws {
        let client = Client(
            transport: MockTransport(.status(404)),
            middleware: [.retry(policy, clock: clock), .validatingStatus()]
        )

        let error = try await failure(of: client)

        #expect(error.attempts == 1)
        #expect(error.elapsed == .zero)
        #expect(!error.description.contains("after"))
    }

    @Test("every attempt timed out: the per-attempt timeout is named, after 3 attempts over 6.4 s")
    func attemptTimeout() async throws {
        let client = Client(transport: MockTransport(.hang), middleware: stack())

        let error = try await failure(of: client)

        #expect(error.code == .timedOut)
        #expect(error.timeoutScope == .attempt)
        #expect(error.timeout == .seconds(2))
        #expect(error.attempts == 3)
        #expect(error.elapsed == .milliseconds(6_400))
        #expect(
            error.description
                == "CourierError.timedOut: GET https://api.example.test/items: after 3 attempts over 6.4 s: the "
                + "per-attempt timeout of 2.0 seconds passed [middleware: timeout]"
        )
    }

    @Test("the whole call ran out of time in its third attempt: the whole-call timeout is named, with the attempts")
    func callTimeout() async throws {
        // Attempts at 0–2 s and 2.2–4.2 s time out; the third starts at 4.4 s and the call's 5 s end it.
        let client = Client(transport: MockTransport(.hang), middleware: stack(call: .seconds(5)))

        let error = try await failure(of: client)

        #expect(error.code == .timedOut)
        #expect(error.timeoutScope == .call)
        #expect(error.timeout == .seconds(5))
        #expect(error.attempts == 3)
        #expect(error.elapsed == .seconds(5))
        #expect(
            error.description
                == "CourierError.timedOut: GET https://api.example.test/items: after 3 attempts over 5.0 s: the "
                + "whole-call timeout of 5.0 seconds passed [middleware: timeout]"
        )
    }

    @Test("a whole-call timeout cuts the first attempt: it is named, with how long the call ran")
    func callTimeoutFirstAttempt() async throws {
        let client = Client(transport: MockTransport(.hang), middleware: [.timeout(.seconds(2), clock: clock)])

        let error = try await failure(of: client)

        #expect(error.timeoutScope == .call)
        #expect(error.attempts == 1)
        #expect(error.elapsed == .seconds(2))
        #expect(
            error.description
                == "CourierError.timedOut: GET https://api.example.test/items: after 2.0 s: the whole-call timeout of "
                + "2.0 seconds passed [middleware: timeout]"
        )
    }

    @Test("secrets stay out of a retried call's story")
    func redacted() async throws {
        let client = Client(
            transport: MockTransport(.status(503)),
            middleware: [.retry(policy, clock: clock), .validatingStatus()]
        )
        let request = URLRequest(url: URL(string: "https://user:hunter2@api.example.test/items?access_token=s3cr3t")!)

        let error = try await failure(of: client, request)

        #expect(error.attempts == 3)
        #expect(error.description.contains("after 3 attempts over 400.0 ms"))
        #expect(!error.description.contains("hunter2"))
        #expect(!error.description.contains("s3cr3t"))
        #expect(!String(reflecting: error).contains("s3cr3t"))
    }
}
