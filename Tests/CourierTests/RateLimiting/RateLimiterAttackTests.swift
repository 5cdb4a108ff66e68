import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A reviewer's attacks on the limiter's untimed fast path and last-origin cache: whatever path a request takes
/// (admitted at once, or through `acquire` with the clock), each partition must end in the state the timed state
/// machine alone reaches, with the key `RateLimitPolicy.host(of:)` (or the policy's own partition) names.
@Suite("RateLimiter attacks")
struct RateLimiterAttackTests {
    private typealias Machine = RateLimiter.Machine

    /// URLs of two partitions, spelled many ways: same origin text with other tails, another case, the default
    /// port written out, user info, a trailing dot (another key), and an IPv6 literal (Foundation's key).
    private static let urls = [
        "https://a.test/x", "https://a.test?q", "HTTPS://A.TEST/y", "https://a.test:443/z", "https://u@a.test/",
        "https://a.test./", "http://a.test:443/", "https://b.test/", "https://b.test:443#f", "https://[::1]/",
        "https://[::1]:443/p",
    ]

    private static let date = Date(timeIntervalSince1970: 1_767_225_600)

    /// A response that says nothing, a quota (field names in odd case), a `429` with `Retry-After`, or none (a transport error).
    private static func response(_ kind: UInt64, url: URL, remaining: Int) -> HTTPURLResponse? {
        let fields: [String: String]
        let status: Int
        switch kind % 10 {
        case 0, 1, 2, 3, 4, 5:
            (status, fields) = (200, ["Content-Type": "text/plain"])
        case 6:
            // Without a limit half the time: at the reset such a partition probes again and may become unlimited.
            status = 200
            fields = ["RateLimit-remaining": "\(remaining)", "RATELIMIT-RESET": "30"].merging(
                remaining % 2 == 0 ? ["ratelimit-LIMIT": "5"] : [:]
            ) { $1 }
        case 7, 8:
            (status, fields) = (429, ["Retry-After": "7", "RateLimit-Xyzzy": "1"])
        default:
            return nil
        }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
    }

    @Test(
        "the fast path and the cache leave every partition as the timed machine alone would",
        .timeLimit(.minutes(1)),
        arguments: 0..<16
    )
    func fastPathMatchesTimedMachine(seed: UInt64) async throws {
        var random = SplitMix64.derived(seed: seed, 29, 77)
        let clock = ManualClock()
        let recorded = LockedState([String: Int]())
        let store = RecordingStore { partition in recorded.withLock { $0[partition, default: 0] += 1 } }
        let limiter = RateLimiter(
            RateLimitPolicy(currentDate: { Self.date }),
            store: store,
            clock: clock
        )
        var mirrors: [String: Machine] = [:]
        var expectedRecords: [String: Int] = [:]
        var leases: [(lease: RateLimiter.Lease, url: URL)] = []
        var (atOnce, timed, limitedSteps) = (0, 0, 0)
        let settings = Machine.Settings(
            maximumQueueLength: 10_000,
            maximumWait: .seconds(60),
            clientLimit: nil,
            clientWindow: nil,
            fallbackDelay: .seconds(1)
        )
        for step in 0..<600 {
            let now = clock.now.offset
            switch random.next() % 6 {
            case 0, 1, 2:
                let url = try #require(URL(string: Self.urls[Int(random.next() % UInt64(Self.urls.count))]))
                let request = URLRequest(url: url)
                let key = HostKey.foundationKey(url)
                var mirror = mirrors[key] ?? Machine(settings: settings)
                guard case .send(let ticket) = mirror.acquire(now: now, deadline: nil) else { continue }
                mirrors[key] = mirror
                let lease: RateLimiter.Lease
                switch limiter.admit(request) {
                case .lease(let admitted):
                    lease = admitted
                    atOnce += 1
                case .acquire(let partition):
                    lease = try await limiter.acquire(request, partition: partition)
                    timed += 1
                }
                #expect(lease.partition == key, "step \(step): \(url)")
                #expect(lease.ticket == ticket, "step \(step): \(url)")
                leases.append((lease, url))
            case 3, 4:
                guard !leases.isEmpty else { continue }
                let (lease, url) = leases.remove(at: Int(random.next() % UInt64(leases.count)))
                let response = Self.response(random.next(), url: url, remaining: Int(random.next() % 6))
                let observation = response.map { RateLimitHeaders.observe($0, currentDate: { Self.date }) }
                var mirror = try #require(mirrors[lease.partition])
                let output = mirror.complete(lease.ticket, observation: observation, now: now)
                mirrors[lease.partition] = mirror
                let quota = limiter.complete(lease, request: URLRequest(url: url), response: response)
                #expect((quota != nil) == (output.updated != nil), "step \(step)")
                if let quota {
                    expectedRecords[lease.partition, default: 0] += 1
                    await limiter.record(quota, for: lease.partition)
                }
            default:
                clock.advance(by: .seconds(Int(random.next() % 40)))
            }
            let later = clock.now.offset
            if mirrors.values.contains(where: { !$0.isUnlimited && $0.remaining != nil }) { limitedSteps += 1 }
            for (key, mirror) in mirrors {
                let state = limiter.state(for: key)
                #expect(state?.inFlight == mirror.inFlight, "step \(step): \(key)")
                #expect(state?.isUnlimited == mirror.isUnlimited, "step \(step): \(key)")
                #expect(state?.limit == mirror.limit, "step \(step): \(key)")
                #expect(state?.remaining == (mirror.isUnlimited ? nil : mirror.remaining), "step \(step): \(key)")
                #expect(state?.resetIn == mirror.resetAt.map { $0 - later }, "step \(step): \(key)")
            }
        }
        // A store other than the in-memory one is written off the response's path, the latest quota of a
        // partition only: every partition whose quota changed was written, at least once.
        await limiter.storeWritesSettled()
        #expect(Set(recorded.withLock { $0 }.keys) == Set(expectedRecords.keys))
        // Both paths were taken, and partitions were limited for a while.
        #expect(atOnce > 10)
        #expect(timed > 10)
        #expect(limitedSteps > 10)
    }

    @Test(
        "a custom partition is called for every request, even for URLs of the last origin",
        .timeLimit(.minutes(1))
    )
    func customPartitionNotCached() async throws {
        let limiter = RateLimiter(RateLimitPolicy(partition: { $0.url?.query ?? "none" }), clock: ManualClock())
        for text in ["https://a.test/?one", "https://a.test/?two", "https://a.test/?one", "https://a.test/"] {
            let request = URLRequest(url: try #require(URL(string: text)))
            let lease: RateLimiter.Lease
            switch limiter.admit(request) {
            case .lease(let atOnce): lease = atOnce
            case .acquire(let partition): lease = try await limiter.acquire(request, partition: partition)
            }
            #expect(lease.partition == (request.url?.query ?? "none"))
            _ = limiter.complete(lease, request: request, response: nil)
        }
        #expect(limiter.state(for: "a.test:443") == nil)
    }

    @Test(
        "a 429 on a request admitted at once holds the partition: a later request with a shorter deadline times out",
        .timeLimit(.minutes(1))
    )
    func throttledAfterFastPath() async throws {
        let clock = ManualClock()
        let url = try #require(URL(string: "https://api.example.test/items"))
        let transport = MockTransport(
            .status(200),
            then: .status(200),
            .status(429, headers: ["retry-after": "10"])
        )
        let limiter = RateLimiter(RateLimitPolicy(currentDate: { Self.date }), clock: clock)
        let client = Client(
            transport: transport,
            middleware: [.timeout(.seconds(5), clock: clock), .rateLimiting(limiter)]
        )
        _ = try await client.send(URLRequest(url: url))
        #expect(limiter.state(for: "api.example.test:443")?.isUnlimited == true)
        _ = try await client.send(URLRequest(url: url))
        _ = try? await client.send(URLRequest(url: url))
        #expect(limiter.state(for: "api.example.test:443")?.isUnlimited == false)
        #expect(limiter.state(for: "api.example.test:443")?.resetIn == .seconds(10))
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        #expect(error?.code == .timedOut)
        #expect(transport.callCount == 3)
        #expect(limiter.state(for: "api.example.test:443")?.inFlight == 0)
    }
}

/// A store that tells each write.
private actor RecordingStore: RateLimitStore {
    private var quotas: [String: RateLimitQuota] = [:]
    private let onRecord: @Sendable (String) -> Void

    init(onRecord: @escaping @Sendable (String) -> Void) {
        self.onRecord = onRecord
    }

    func quota(for partition: String) async throws -> RateLimitQuota? {
        quotas[partition]
    }

    func record(_ quota: RateLimitQuota, for partition: String) async throws {
        quotas[partition] = quota
        onRecord(partition)
    }
}
