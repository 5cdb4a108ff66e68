import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Retry and timeout over real sockets", .timeLimit(.minutes(2)))
struct ResilienceEndToEndTests {
    /// A policy without backoff delays and without a budget, so a test's attempts are only what it asks.
    static func quickRetry(attempts: Int, onRetry: (@Sendable (RetryEvent) -> Void)? = nil) -> RetryPolicy {
        RetryPolicy(maximumAttempts: attempts, backoff: .immediate, budget: nil, onRetry: onRetry)
    }

    @Test("Fail N times, then succeed: the retry makes exactly N + 1 attempts", arguments: TransportKind.allCases)
    func failThenSucceed(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(),
                middleware: [.retry(Self.quickRetry(attempts: 4)), .validatingStatus()]
            )
            let flaky: FlakyResponse = try await client.send(.get("/flaky/\(key)", query: ["failures": 3]))
            #expect(flaky.attempts == 4)
            #expect(flaky.error == false)
            #expect(try await Inspector(server).counters(key).flakyAttempts == 4)
        }
    }

    @Test("Attempts run out: the last status is reported and nothing more is sent", arguments: TransportKind.allCases)
    func attemptsRunOut(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(),
                middleware: [.retry(Self.quickRetry(attempts: 3)), .validatingStatus()]
            )
            let error = try await #require(throws: CourierError.self) {
                try await client.send(
                    Request<FlakyResponse>.get("/flaky/\(key)", query: ["failures": 5, "status": 502])
                )
            }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 502)
            #expect(try await Inspector(server).counters(key).flakyAttempts == 3)
        }
    }

    @Test("A POST without an idempotency key is not retried", arguments: TransportKind.allCases)
    func postNotRetried(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(),
                middleware: [.retry(Self.quickRetry(attempts: 3))]
            )
            let request = Request<FlakyResponse>.post("/flaky/\(key)", query: ["failures": 1]).accepting(200..<600)
            let flaky = try await client.send(request)
            #expect(flaky.error == true)
            #expect(try await Inspector(server).counters(key).flakyAttempts == 1)
        }
    }

    @Test(
        "Retry-After (seconds or an HTTP date) sets the wait before the retry",
        arguments: TransportKind.allCases,
        ["retryAfter", "retryAfterDate"]
    )
    func retryAfter(kind: TransportKind, form: String) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let clock = ManualClock()
            let events = Locked<[RetryEvent]>([])
            let policy = Self.quickRetry(attempts: 2) { event in events.withLock { $0.append(event) } }
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(),
                middleware: [.retry(policy, clock: clock), .validatingStatus()]
            )
            let request = Request<FlakyResponse>.get(
                "/flaky/\(key)",
                query: Query([URLQueryItem(name: "failures", value: "1"), URLQueryItem(name: form, value: "2")])
            )
            // The retry sleeps on the manual clock; `run` moves it to the sleeper's deadline.
            let flaky = try await clock.run { try await client.send(request) }
            #expect(flaky.attempts == 2)
            #expect(try await Inspector(server).counters(key).flakyAttempts == 2)

            let event = try #require(events.withLock { $0.first })
            #expect(event.reason.description == "status 503")
            let asked = try #require(event.retryAfter)
            if form == "retryAfter" {
                #expect(asked == .seconds(2))
            } else {
                // The server rounds the date up to a whole second; whole-second dates lose the fraction.
                #expect(asked > .seconds(1) && asked <= .seconds(3))
            }
            #expect(event.delay == asked)
            #expect(clock.now.offset == asked)
        }
    }

    @Test("A timeout cancels the real connection: the server sees /hang end", arguments: TransportKind.allCases)
    func timeoutClosesConnection(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(transport: kind.make(), middleware: [.timeout(.milliseconds(200))])
            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: server.url("/hang", query: ["key": key])))
            }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .milliseconds(200))
            let ended = try await Inspector(server).wait(key, ["hangsEnded": 1])
            #expect(ended.hanging == 0)
        }
    }

    @Test(
        "A per-attempt timeout is retried; the whole-call timeout bounds every attempt",
        arguments: TransportKind.allCases
    )
    func perAttemptAndWholeCall(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(
                transport: kind.make(),
                middleware: [
                    .timeout(.seconds(30)),
                    .retry(Self.quickRetry(attempts: 3)),
                    .timeout(.milliseconds(150)),
                ]
            )
            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: server.url("/hang", query: ["key": key])))
            }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .milliseconds(150))
            // Three attempts reached the server, and each connection was closed.
            let ended = try await Inspector(server).wait(key, ["hangsEnded": 3])
            #expect(ended.hanging == 0)
        }
    }
}
