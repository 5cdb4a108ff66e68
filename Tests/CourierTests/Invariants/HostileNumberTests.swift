import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The promise "no input crashes the process", for numbers: every numeric header field Courier reads, fed
/// values no server should send, end to end through the middleware that reads it. None traps, and each lands
/// on a result a reader can name: a wait no longer than the policy's maximum, a cached response that is stale
/// rather than fresh for ever.
@Suite("Hostile numbers in every numeric header field", .timeLimit(.minutes(2)))
struct HostileNumberTests {
    /// What a hostile or broken server may send where a number belongs.
    static let values = [
        "1e308", "-1e308", "-0", "NaN", "inf", "1e21", "9223372036854775808", "18446744073709551616",
        String(repeating: "9", count: 400), "", "soon",
    ]

    /// 2026-01-01T00:00:00Z, the wall clock of every policy here.
    private static let date = Date(timeIntervalSince1970: 1_767_225_600)
    private static let url = URL(string: "https://api.example.test/items")!
    private static let partition = "api.example.test:443"

    /// The rate-limit fields of the three dialects, with `value` in every numeric place, and with `value` only
    /// where the wait comes from (the quota used up).
    static func rateLimitFields(_ value: String) -> [[String: String]] {
        [
            ["X-RateLimit-Limit": value, "X-RateLimit-Remaining": value, "X-RateLimit-Reset": value],
            ["X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": value],
            [
                "RateLimit-Limit": value, "RateLimit-Remaining": value, "RateLimit-Reset": value,
                "RateLimit-Policy": "\(value);w=\(value)",
            ],
            [
                "RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": value,
                "RateLimit-Policy": "10;w=\(value)",
            ],
            [
                "RateLimit": "limit=\(value), remaining=\(value), reset=\(value)",
                "RateLimit-Policy": "\(value);w=\(value)",
            ],
            ["RateLimit": "limit=10, remaining=0, reset=\(value)", "RateLimit-Policy": "10;w=\(value)"],
            ["RateLimit": #""d";r=\#(value);t=\#(value)"#, "RateLimit-Policy": #""d";q=\#(value);w=\#(value)"#],
            ["RateLimit": #""d";r=0;t=\#(value)"#, "RateLimit-Policy": #""d";q=10;w=\#(value)"#],
        ]
    }

    @Test(
        "rate limiting: every dialect's fields and Retry-After; the next request waits at most maximumWait",
        arguments: values
    )
    func rateLimiting(value: String) async throws {
        for fields in Self.rateLimitFields(value) {
            for status in [200, 429] {
                var headers = fields
                if status == 429 { headers["Retry-After"] = value }
                try await expectSane(headers, status: status)
            }
        }
    }

    /// One response with `headers`, then a second request: it goes, fails at once, or waits no longer than the
    /// maximum wait of 60 s and then goes or fails with `rateLimited`.
    private func expectSane(
        _ headers: [String: String],
        status: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let clock = ManualClock()
        let transport = MockTransport(.status(status, headers: headers), then: .ok)
        let limiter = RateLimiter(RateLimitPolicy(maximumWait: .seconds(60), currentDate: { Self.date }), clock: clock)
        let client = Client(transport: transport, middleware: [.rateLimiting(limiter)])
        let context = "\(status) \(headers)"

        let (_, first) = try await client.send(URLRequest(url: Self.url))
        #expect(first.statusCode == status, sourceLocation: sourceLocation)
        let state = try #require(limiter.state(for: Self.partition), sourceLocation: sourceLocation)
        if let resetIn = state.resetIn {
            #expect(resetIn >= .zero && resetIn <= .seconds(NetworkNumber.maximumSeconds), "\(context)")
        }
        for count in [state.limit, state.remaining].compactMap({ $0 }) {
            #expect(count >= 0 && count <= NetworkNumber.maximumCount, "\(context)", sourceLocation: sourceLocation)
        }

        let finished = Locked(false)
        let next = Task {
            defer { finished.withLock { $0 = true } }
            return try await client.send(URLRequest(url: Self.url)).1.statusCode
        }
        try await waitUntil { finished.value || clock.sleeperCount > 0 }
        #expect(
            clock.pendingDeadlines.allSatisfy { $0.offset <= .seconds(60) },
            "\(context): \(clock.pendingDeadlines)",
            sourceLocation: sourceLocation
        )
        clock.advance(by: .seconds(60))
        switch await next.result {
        case .success(let status):
            #expect(status == 200, "\(context)", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(
                (error as? CourierError)?.code == .rateLimited,
                "\(context): \(error)",
                sourceLocation: sourceLocation
            )
        }
    }

    @Test("retry: a 503's Retry-After is honoured up to maximumRetryAfter, else the retry gives up", arguments: values)
    func retryAfter(value: String) async throws {
        let clock = ManualClock()
        let transport = MockTransport(.status(503, headers: ["Retry-After": value]), then: .ok)
        let policy = RetryPolicy(budget: nil, random: { 0 }, currentDate: { Self.date })
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let (_, response) = try await clock.run { try await client.send(URLRequest(url: Self.url)) }
        if NetworkNumber.integer(value) != nil {
            // Every such value here is far beyond the 60 s cap: not worth waiting for.
            #expect(response.statusCode == 503)
            #expect(transport.callCount == 1)
            #expect(clock.now.offset == .zero)
        } else {
            // Not a delay: the backoff applies.
            #expect(response.statusCode == 200)
            #expect(clock.now.offset <= .seconds(60))
        }
    }

    /// The caching fields, each with `value`, beside an `ETag` so that every response is stored.
    static func cacheFields(_ value: String) -> [(name: String, headers: [String: String])] {
        [
            ("Age", ["Cache-Control": "max-age=60", "Age": value]),
            ("max-age", ["Cache-Control": "max-age=\(value)"]),
            ("s-maxage", ["Cache-Control": "public, s-maxage=\(value)"]),
            ("stale-if-error", ["Cache-Control": "max-age=0, stale-if-error=\(value)"]),
            ("Expires", ["Expires": value]),
            ("Date", ["Expires": "Thu, 01 Jan 2026 00:01:00 GMT", "Date": value]),
        ]
    }

    @Test(
        "caching: Age, max-age, s-maxage, stale-if-error, Expires and Date; a huge Age is stale, never fresh for ever",
        arguments: values
    )
    func caching(value: String) async throws {
        for (name, headers) in Self.cacheFields(value) {
            let clock = ManualClock()
            let failing = Locked(false)
            let transport = MockTransport { request in
                if failing.value { return .status(503) }
                var fields = headers
                fields["ETag"] = "\"v1\""
                if request.header("If-None-Match") == "\"v1\"" { return .status(304, headers: fields) }
                return .status(200, body: "v1", headers: fields)
            }
            let cache = HTTPCache(store: InMemoryHTTPCacheStore(), clock: clock, startDate: Self.date)
            let client = Client(transport: transport, middleware: [.caching(cache)])
            let context = "\(name): \(value.prefix(30))"

            #expect(try await client.send(URLRequest(url: Self.url)).1.statusCode == 200)
            clock.advance(by: .seconds(1))
            let (body, second) = try await client.send(URLRequest(url: Self.url))
            #expect(second.statusCode == 200, "\(context)")
            #expect(String(decoding: body, as: UTF8.self) == "v1", "\(context)")
            if let age = second.value(forHTTPHeaderField: "Age") {
                #expect(Int(age).map { $0 >= 0 } == true, "\(context): Age \(age)")
            }
            switch name {
            case "Age":
                // A huge Age makes the response stale; one that is not an integer is ignored (RFC 9111 §5.1).
                let isHuge = NetworkNumber.integer(value) != nil
                #expect(transport.callCount == (isHuge ? 2 : 1), "\(context)")
            case "max-age":
                // A huge max-age is fresh for a very long time; a malformed one is stale at once.
                let isValid = NetworkNumber.digits(value.utf8) != nil
                #expect(transport.callCount == (isValid ? 1 : 2), "\(context)")
            case "Date":
                // A Date that is not a date is ignored: the lifetime counts from arrival, and Expires is 60 s on.
                #expect(transport.callCount == 1, "\(context)")
            default:
                // No lifetime (s-maxage is for shared caches; max-age=0; an Expires that is not a date).
                #expect(transport.callCount == 2, "\(context)")
            }

            failing.withLock { $0 = true }
            clock.advance(by: .seconds(1))
            let (_, third) = try await client.send(URLRequest(url: Self.url))
            #expect([200, 503].contains(third.statusCode), "\(context)")
        }
    }
}
