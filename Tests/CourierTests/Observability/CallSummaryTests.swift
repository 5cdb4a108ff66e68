import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The logging and timing layers say how many attempts a call made and where its time went, as the layers
/// below measured it on the suite's manual clock; the log lines are the forms the Observability article and
/// `LogRecord` show.
@Suite("Where a call's time went", .timeLimit(.minutes(1)))
struct CallSummaryTests {
    private let clock = ManualClock()
    private let records = Locked<[LogRecord]>([])

    private var sink: LogSink {
        LogSink { [records] record in records.withLock { $0.append(record) } }
    }

    /// The one record the sink got, or `nil` when it got none or several.
    private var onlyRecord: LogRecord? {
        let records = self.records.value
        return records.count == 1 ? records[0] : nil
    }

    /// Three attempts, 200 ms apart.
    private var policy: RetryPolicy {
        RetryFixtures.policy(attempts: 3, backoff: .constant(.milliseconds(200)))
    }

    private func send(_ client: Client, _ request: URLRequest = RetryFixtures.request()) async throws {
        let clock = self.clock
        _ = try await clock.run { try await client.send(request) }
    }

    @Test("503, 503, 200 under the recommended stack: the log line has 3 attempts, the backoff and the waits")
    func recovered() async throws {
        let transport = MockTransport(
            .status(503).delayed(by: .seconds(2), on: clock),
            then: .status(503).delayed(by: .seconds(2), on: clock),
            .ok.delayed(by: .seconds(2), on: clock)
        )
        let client = Client(
            transport: transport,
            middleware: [
                .logging(to: sink, clock: clock),
                .timeout(.seconds(10), clock: clock),
                .retry(policy, clock: clock),
                .timeout(.seconds(3), clock: clock),
                .validatingStatus(),
            ]
        )

        try await send(client)

        let record = try #require(onlyRecord)
        #expect(record.call == CallSummary(attempts: 3, backoff: .milliseconds(400), waitingForHead: .seconds(6)))
        #expect(
            record.description
                == "[info] GET https://api.example.test/items → 200 (6400.0 ms; 3 attempts; backoff 400.0 ms, head "
                + "6000.0 ms)"
        )
        #expect(record.metadata["attempts"] == "3")
        #expect(record.metadata["wait.backoff_ms"] == "400.0")
        #expect(record.metadata["wait.head_ms"] == "6000.0")
        #expect(record.metadata["wait.slot_ms"] == nil)
    }

    @Test("503, 503, 503: the failure's line tells the attempts, and its error text the story")
    func failed() async throws {
        let client = Client(
            transport: MockTransport(.status(503).delayed(by: .seconds(2), on: clock)),
            middleware: [.logging(to: sink, clock: clock), .retry(policy, clock: clock), .validatingStatus()]
        )

        await #expect(throws: CourierError.self) { try await send(client) }

        let record = try #require(onlyRecord)
        #expect(record.call?.attempts == 3)
        #expect(
            record.description
                == "[error] GET https://api.example.test/items failed: unacceptableStatus (status 503) (6400.0 ms; 3 "
                + "attempts; backoff 400.0 ms, head 6000.0 ms): after 3 attempts over 6.4 s: the status 503 is not "
                + "acceptable (expected 200..<300) [middleware: validatingStatus]"
        )
    }

    @Test("the whole call's timeout in the log: the attempts the call made, the timeout named")
    func callTimeout() async throws {
        let client = Client(
            transport: MockTransport(.hang),
            middleware: [
                .logging(to: sink, clock: clock),
                .timeout(.seconds(5), clock: clock),
                .retry(policy, clock: clock),
                .timeout(.seconds(2), clock: clock),
            ]
        )

        await #expect(throws: CourierError.self) { try await send(client) }

        let record = try #require(onlyRecord)
        #expect(record.call?.attempts == 3)
        #expect(record.call?.backoff == .milliseconds(400))
        #expect(record.error == "after 3 attempts over 5.0 s: the whole-call timeout of 5.0 seconds passed")
    }

    @Test("a wait for a token refresh is counted as such")
    func refresh() async throws {
        let clock = self.clock
        let refresher = TokenRefresher(token: .init("old"), clock: clock) { _ in
            try await clock.sleep(for: .seconds(1))
            return .init("new")
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(.status(401), then: .ok),
            middleware: [.logging(to: sink, clock: clock), .authenticating(with: refresher)]
        )

        try await send(client)

        let record = try #require(onlyRecord)
        #expect(record.call?.waitingForRefresh == .seconds(1))
        #expect(record.call?.attempts == 1)
        #expect(record.description.contains("refresh 1000.0 ms"))
    }

    @Test("a wait for a concurrency slot is counted as such")
    func slot() async throws {
        let client = Client(
            transport: MockTransport(.ok.delayed(by: .seconds(1), on: clock)),
            middleware: [.logging(to: sink, clock: clock), .limitingConcurrency(maxInFlight: 1)]
        )
        let clock = self.clock
        try await clock.run {
            async let first = client.send(RetryFixtures.request())
            async let second = client.send(RetryFixtures.request())
            _ = try await (first, second)
        }

        let waits = records.value.compactMap { $0.call?.waitingForSlot }.sorted()
        #expect(waits == [.zero, .seconds(1)])
    }

    @Test("the timing layer's four-argument report carries the summary")
    func timing() async throws {
        let reported = Locked<[CallSummary]>([])
        let client = Client(
            transport: MockTransport(.status(503), then: .ok),
            middleware: [
                .timing(clock: clock) { _, _, _, call in reported.withLock { $0.append(call) } },
                .retry(policy, clock: clock),
                .validatingStatus(),
            ]
        )

        try await send(client)

        #expect(reported.value == [CallSummary(attempts: 2, backoff: .milliseconds(200))])
    }

    @Test("a summary prints its attempts and the waits that are not zero")
    func description() {
        #expect(CallSummary().description == "1 attempt")
        #expect(
            CallSummary(attempts: 3, waitingForSlot: .milliseconds(12), waitingForBody: .microseconds(2_500))
                .description == "3 attempts; slot 12.0 ms, body 2.5 ms"
        )
    }
}
