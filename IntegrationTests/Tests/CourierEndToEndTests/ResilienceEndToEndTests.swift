import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Retry and timeout over real sockets", .endToEndLimit(minutes: 2))
struct ResilienceEndToEndTests {
    /// A policy without backoff delays and without a budget, so a test's attempts are only what it asks.
    static func quickRetry(attempts: Int, onRetry: (@Sendable (RetryEvent) -> Void)? = nil) -> RetryPolicy {
        RetryPolicy(maximumAttempts: attempts, backoff: .immediate, budget: nil, onRetry: onRetry)
    }

    @Test("Fail N times, then succeed: the retry makes exactly N + 1 attempts", arguments: TransportKind.allCases)
    func failThenSucceed(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.retry(Self.quickRetry(attempts: 4)), .validatingStatus()])
            let flaky: FlakyResponse = try await client.send(.get("/flaky/\(e2e.key)", query: ["failures": 3]))
            #expect(flaky.attempts == 4)
            #expect(flaky.error == false)
            #expect(try await e2e.inspector.counters(e2e.key).flakyAttempts == 4)
        }
    }

    @Test("Attempts run out: the last status is reported and nothing more is sent", arguments: TransportKind.allCases)
    func attemptsRunOut(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.retry(Self.quickRetry(attempts: 3)), .validatingStatus()])
            let error = try await #require(throws: CourierError.self) {
                try await client.send(
                    Request<FlakyResponse>.get("/flaky/\(e2e.key)", query: ["failures": 5, "status": 502])
                )
            }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 502)
            #expect(try await e2e.inspector.counters(e2e.key).flakyAttempts == 3)
        }
    }

    @Test("A POST without an idempotency key is not retried", arguments: TransportKind.allCases)
    func postNotRetried(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.retry(Self.quickRetry(attempts: 3))])
            let request = Request<FlakyResponse>.post("/flaky/\(e2e.key)", query: ["failures": 1]).accepting(200..<600)
            let flaky = try await client.send(request)
            #expect(flaky.error == true)
            #expect(try await e2e.inspector.counters(e2e.key).flakyAttempts == 1)
        }
    }

    @Test(
        "Retry-After (seconds or an HTTP date) sets the wait before the retry",
        arguments: TransportKind.allCases,
        ["retryAfter", "retryAfterDate"]
    )
    func retryAfter(kind: TransportKind, form: String) async throws {
        try await EndToEnd.run(kind) { e2e in
            let clock = ManualClock()
            let events = Locked<[RetryEvent]>([])
            let policy = Self.quickRetry(attempts: 2) { event in events.withLock { $0.append(event) } }
            let client = e2e.client([.retry(policy, clock: clock), .validatingStatus()])
            let request = Request<FlakyResponse>.get(
                "/flaky/\(e2e.key)",
                query: Query([URLQueryItem(name: "failures", value: "1"), URLQueryItem(name: form, value: "50")])
            )
            // The retry sleeps on the manual clock; `run` moves it to the sleeper's deadline.
            let flaky = try await clock.run { try await client.send(request) }
            #expect(flaky.attempts == 2)
            #expect(try await e2e.inspector.counters(e2e.key).flakyAttempts == 2)

            let event = try #require(events.withLock { $0.first })
            #expect(event.reason.description == "status 503")
            let asked = try #require(event.retryAfter)
            if form == "retryAfter" {
                #expect(asked == .seconds(50))
            } else {
                // The server rounds the date up to a whole second; the client measures from when it reads the
                // date, so the time the answer took comes off (tens of seconds under the thread sanitizer).
                #expect(asked > .zero && asked <= .seconds(51))
            }
            #expect(event.delay == asked)
            #expect(clock.now.offset == asked)
        }
    }

    @Test("A timeout cancels the real connection: the server sees /hang end", arguments: TransportKind.allCases)
    func timeoutClosesConnection(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            // The timeout runs on a manual clock, moved on once the server holds the request: no race between
            // a loaded machine and a short deadline. (A transport that honours the call's deadline itself, as
            // AsyncHTTPClientTransport does, counts it in real time: a minute is far beyond the test.)
            let clock = ManualClock()
            let client = e2e.client([.timeout(.seconds(60), clock: clock)])
            let call = Task { try await client.send(e2e.hang) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1])
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(60))
            let error = try await #require(throws: CourierError.self) { try await call.join() }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .seconds(60))
            try await e2e.expectHangsEnded(1)
        }
    }

    @Test(
        "A per-attempt timeout is retried; the whole-call timeout bounds every attempt",
        arguments: TransportKind.allCases
    )
    func perAttemptAndWholeCall(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let clock = ManualClock()
            // Long timeouts, moved on by hand: a transport that honours the call's deadline counts it in real time.
            let client = e2e.client([
                .timeout(.seconds(600), clock: clock),
                .retry(Self.quickRetry(attempts: 3)),
                .timeout(.seconds(60), clock: clock),
            ])
            let call = Task { try await client.send(e2e.hang) }
            // Each attempt reaches the server; only then does its timeout fire, and the server sees the
            // connection close before the next attempt arrives.
            for attempt in 1...3 {
                _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1, "hangsEnded": attempt - 1])
                // The whole call's timer and this attempt's.
                await clock.waitForSleepers(count: 2)
                clock.advance(by: .seconds(60))
                _ = try await e2e.inspector.wait(e2e.key, ["hangsEnded": attempt])
            }
            let error = try await #require(throws: CourierError.self) { try await call.join() }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .seconds(60))
            // Three attempts reached the server, each connection was closed, and no fourth was sent.
            try await e2e.expectHangsEnded(3)
            #expect(clock.now.offset == .seconds(180))
        }
    }
}
