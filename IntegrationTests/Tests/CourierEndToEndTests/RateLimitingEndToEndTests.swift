import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Rate limiting against a server's own rate-limit fields", .endToEndLimit(minutes: 3))
struct RateLimitingEndToEndTests {
    @Test(
        "1,000 concurrent callers against 50 per window: zero 429s, in ceil(1000 / 50) = 20 windows",
        arguments: TransportKind.allCases,
        ["ietf", "x"]
    )
    func thousandCallers(kind: TransportKind, style: String) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let clock = ManualClock()
            // Waiting 19 windows is the point here, so no maximum wait.
            let limiter = RateLimiter(RateLimitPolicy(maximumWait: nil), clock: clock)
            let client = Client(transport: kind.make(), middleware: [.rateLimiting(limiter)])
            let control = Inspector(server).client
            let url = server.url("/ratelimited/\(key)", query: ["limit": "50", "style": style])
            let done = Arrivals()
            let calls = (0..<1_000).map { _ in
                Task {
                    defer { done.arrive() }
                    return try await client.send(URLRequest(url: url)).1.statusCode
                }
            }
            for window in 1...20 {
                // The window's 50 have their answers; everyone else waits in the limiter, nothing is in flight.
                await done.wait(for: 50 * window)
                #expect(done.count == 50 * window)
                guard window < 20 else { break }
                let advance: RateLimitStats = try await control.send(.post("/ratelimited/\(key)/advance"))
                #expect(advance.accepted.last == 0)
                clock.advance(by: .seconds(60))
            }
            var statuses: [Int: Int] = [:]
            for call in calls { statuses[try await call.join(), default: 0] += 1 }

            #expect(statuses == [200: 1_000])
            let stats: RateLimitStats = try await control.send(.get("/ratelimited/\(key)/stats"))
            #expect(stats.refused == 0)
            #expect(stats.accepted == Array(repeating: 50, count: 20))
            #expect(clock.now.offset == .seconds(19 * 60))
            #expect(limiter.state(for: RateLimitPolicy.host(of: URLRequest(url: url)))?.inFlight == 0)
        }
    }

    @Test(
        "An endpoint that sends only 429 + Retry-After: one 429, retried once when the server said; later calls wait without reaching it",
        arguments: TransportKind.allCases
    )
    func retryAfterOnly(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let clock = ManualClock()
            let retries = Locked<[RetryEvent]>([])
            var retry = RetryPolicy(random: { 0 })
            retry.onRetry = { event in retries.withLock { $0.append(event) } }
            let limiter = RateLimiter(RateLimitPolicy(), clock: clock)
            let client = Client(
                transport: kind.make(),
                middleware: [.retry(retry, clock: clock), .rateLimiting(limiter)]
            )
            let control = Inspector(server).client
            let url = server.url("/throttled/\(key)", query: ["retryAfter": "30"])

            let first = Task { try await client.send(URLRequest(url: url)).1.statusCode }
            // The retry sleeps the 30 seconds the server asked for.
            await clock.waitForSleepers(count: 1)
            let later = (0..<10).map { _ in Task { try await client.send(URLRequest(url: url)).1.statusCode } }
            // The later calls wait in the limiter for the same 30 seconds, on one timer.
            await clock.waitForSleepers(count: 2)
            let before: RateLimitStats = try await control.send(.get("/ratelimited/\(key)/stats"))
            #expect(before == RateLimitStats(accepted: [0], refused: 1))

            var open = URLRequest(url: server.url("/throttled/\(key)/open"))
            open.httpMethod = "POST"
            _ = try await control.send(open)
            clock.advance(by: .seconds(30))
            #expect(try await first.join() == 200)
            for call in later { #expect(try await call.join() == 200) }

            let after: RateLimitStats = try await control.send(.get("/ratelimited/\(key)/stats"))
            #expect(after == RateLimitStats(accepted: [11], refused: 1))
            #expect(retries.value.map(\.retryAfter) == [.seconds(30)])
            // Nobody waited twice: the retry's sleep and the limiter's window ended together.
            #expect(clock.now.offset == .seconds(30))
        }
    }
}
