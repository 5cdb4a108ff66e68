import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The limiter keys a request by the origin of the last URL it keyed when the policy partitions by host: every
/// request must still land in the partition `RateLimitPolicy.host(of:)` names.
@Suite("RateLimiter partitions")
struct RateLimiterPartitionTests {
    /// URLs that share an origin, differ from it by one byte after it, or key the same partition from another text.
    private static let urls = [
        "https://a.test/x", "https://a.test/y?q=1", "https://a.test#f", "https://a.test", "https://A.test/z",
        "https://a.test:443/w", "https://a.test:8443/", "http://a.test/", "https://b.test/", "https://a.testing/",
        "https://a.test.evil/", "https://user@a.test/", "https://a.test:4430/", "HTTPS://a.test/", "https://[::1]/",
    ]

    /// Sends `request` through `limiter` as the middleware does, answered without rate-limit fields; returns the
    /// partition its lease was in.
    private static func send(_ request: URLRequest, through limiter: RateLimiter) async throws -> String {
        let lease: RateLimiter.Lease
        switch limiter.admit(request) {
        case .lease(let atOnce): lease = atOnce
        case .acquire(let partition): lease = try await limiter.acquire(request, partition: partition)
        }
        let url = try #require(request.url)
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])
        )
        #expect(limiter.complete(lease, request: request, response: response) == nil)
        return lease.partition
    }

    @Test("every request is in the partition host(of:) names, whatever the URL before it", arguments: 0..<6)
    func hostPartition(seed: UInt64) async throws {
        var random = SplitMix64.derived(seed: seed, 29, 4)
        let limiter = RateLimiter(RateLimitPolicy(), clock: ManualClock())
        #expect(limiter.policy.partitionsByHost)
        var keys = Set<String>()
        for _ in 0..<200 {
            let url = try #require(URL(string: Self.urls[Int(random.next() % UInt64(Self.urls.count))]))
            let request = URLRequest(url: url)
            let expected = RateLimitPolicy.host(of: request)
            #expect(try await Self.send(request, through: limiter) == expected, "\(url)")
            keys.insert(expected)
        }
        for key in keys {
            let state = try #require(limiter.state(for: key))
            #expect(state.inFlight == 0)
            #expect(state.isUnlimited)
        }
    }

    @Test("a partition set after the policy is made is used for every request")
    func partitionSetLater() async throws {
        var policy = RateLimitPolicy()
        policy.partition = { request in request.url?.path ?? "" }
        #expect(!policy.partitionsByHost)
        #expect(!RateLimitPolicy(partition: RateLimitPolicy.host(of:)).partitionsByHost)
        let limiter = RateLimiter(policy, clock: ManualClock())
        for text in ["https://a.test/one", "https://a.test/two", "https://a.test/one", "https://b.test/two"] {
            let url = try #require(URL(string: text))
            let request = URLRequest(url: url)
            #expect(try await Self.send(request, through: limiter) == request.url?.path)
        }
        #expect(limiter.state(for: "a.test:443") == nil)
        #expect(limiter.state(for: "/one")?.isUnlimited == true)
    }

    @Test(
        "a limiter keyed by tenant forgets partitions that hold nothing, and keeps those that still hold a window",
        .timeLimit(.minutes(1))
    )
    func partitionsDoNotAccumulate() async throws {
        let clock = ManualClock()
        var policy = RateLimitPolicy()
        policy.partition = { $0.value(forHTTPHeaderField: "X-Tenant") ?? "none" }
        let limiter = RateLimiter(policy, clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { request in
                // Tenant "held" has 5 requests left until its reset, in an hour; every other says nothing.
                request.header("X-Tenant") == "held"
                    ? .status(200, headers: ["RateLimit-Remaining": "5", "RateLimit-Reset": "3600"]) : .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        func send(_ tenant: String) async throws {
            var request = URLRequest(url: URL(string: "https://api.example.test/x")!)
            request.setValue(tenant, forHTTPHeaderField: "X-Tenant")
            _ = try await client.send(request)
        }

        try await send("held")
        for tenant in 0..<5_000 { try await send("t\(tenant)") }

        // Never more than twice the partitions that hold something, nor fewer than the first sweep's threshold.
        #expect(limiter.partitionCount <= 1_025)
        let held = try #require(limiter.state(for: "held"))
        #expect(held.remaining == 5)
        #expect(limiter.state(for: "t0") == nil)
        #expect(limiter.state(for: "t4999") != nil)
    }
}
