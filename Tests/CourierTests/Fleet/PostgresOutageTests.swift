#if Postgres && os(Linux)
import Courier
import CourierTesting
import Foundation
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// PostgreSQL stopped for 10 seconds in the middle of a run: the replica's calls go through a proxy to the
/// database that the test takes down and brings back. One of the suite's tests, which run one at a time.
extension FleetProcessTests {
    /// One call: when it started, how long it took, and whether it succeeded.
    struct Call: Sendable {
        var start: ContinuousClock.Instant
        var duration: Duration
        var succeeded: Bool
    }

    @Test(
        "PostgreSQL down for 10 s mid-run: no call fails or passes its deadline, a storeFailed event, the store used again after"
    )
    func databaseOutage() async throws {
        let proxy = try TCPProxy(upstreamPort: try #require(PostgresTestServer.url?.port))
        defer { proxy.shutdown() }
        let api = try SocketServer { request in
            .keepAlive(status: request.header("Authorization") == "Bearer access-1" ? 200 : 401)
        }
        defer { api.shutdown() }
        try await PostgresTestServer.withClient { direct, table in
            let quotaTable = "\(table)_quota"
            defer {
                Task { _ = try? await direct.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(quotaTable)")) }
            }
            let proxied = PostgresClient(configuration: PostgresTestServer.configuration(port: proxy.port))
            try await withThrowingTaskGroup(of: Void.self) { group in
                defer { group.cancelAll() }
                group.addTask { await proxied.run() }
                let tokens = try PostgresSharedTokenStore(
                    client: proxied,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                )
                let quotas = try PostgresRateLimitStore(client: proxied, table: quotaTable)
                try await PostgresSharedTokenStore(
                    client: direct,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                )
                .createTable()
                try await PostgresRateLimitStore(client: direct, table: quotaTable).createTable()

                let events = Locked<[(ContinuousClock.Instant, RateLimitEvent)]>([])
                var policy = RateLimitPolicy(
                    sharedLimit: .init(maxRequests: 100_000, per: .seconds(1), blockSize: 5),
                    onEvent: { event in events.withLock { $0.append((.now, event)) } }
                )
                policy.storeTimeout = .milliseconds(200)
                let limiter = RateLimiter(policy, store: quotas)
                let refresher = TokenRefresher(
                    token: .init("access-1", expiresIn: .seconds(3600)),
                    sharing: .init(store: tokens, storeTimeout: .milliseconds(200))
                ) { _ in .init("access-1", expiresIn: .seconds(3600)) }
                let client = Client(
                    baseURL: api.url(),
                    middleware: [.timeout(.seconds(3)), .authenticating(with: refresher), .rateLimiting(limiter)]
                )

                // The window the store is in, read directly (not through the proxy).
                let window = { @Sendable () async throws -> Int in
                    let rows = try await direct.query(
                        PostgresQuery(unsafeSQL: "SELECT coalesce(max(window_number), 0) FROM \(quotaTable)")
                    )
                    for try await number in rows.decode(Int.self) { return number }
                    return 0
                }

                let calls = Locked<[Call]>([])
                let stop = Locked(false)
                let workers = Task {
                    await withTaskGroup(of: Void.self) { workers in
                        for _ in 0..<2 {
                            workers.addTask {
                                while !stop.withLock({ $0 }) {
                                    let start = ContinuousClock.now
                                    let status = try? await client.send(URLRequest(url: api.url("/data"))).1.statusCode
                                    calls.withLock {
                                        $0.append(Call(start: start, duration: .now - start, succeeded: status == 200))
                                    }
                                }
                            }
                        }
                    }
                }
                // 3 seconds up, 10 down, then up until the store is used again (at most 20 seconds).
                try await Task.sleep(for: .seconds(3))
                let beforeOutage = try await window()
                proxy.takeDown()
                let downAt = ContinuousClock.now
                try await Task.sleep(for: .seconds(10))
                let duringOutage = try await window()
                proxy.bringUp()
                let upAt = ContinuousClock.now
                var recoveredAt: ContinuousClock.Instant?
                while recoveredAt == nil, ContinuousClock.now - upAt < .seconds(20) {
                    if try await window() > duringOutage { recoveredAt = .now }
                    try await Task.sleep(for: .milliseconds(50))
                }
                stop.withLock { $0 = true }
                await workers.join()

                let all = calls.withLock { $0 }
                let slowest = all.map(\.duration).max() ?? .zero
                let failures = events.withLock { $0 }.filter { if case .storeFailed = $1 { true } else { false } }
                print(
                    "database outage: \(all.count) calls, \(all.count { !$0.succeeded }) failed, slowest \(slowest); "
                        + "\(failures.count) store failures; store used again \(recoveredAt.map { $0 - upAt }.map { "\($0)" } ?? "never") after it returned"
                )
                #expect(beforeOutage > 0, "the store was used before the outage")
                let duringTheOutage = all.count { $0.start > downAt && $0.start < upAt }
                let failedCalls = all.count { !$0.succeeded }
                let failuresReported = failures.count { $0.0 > downAt && $0.0 < upAt }
                #expect(duringTheOutage > 100, "calls went on during the outage")
                #expect(failedCalls == 0)
                // The deadline is 3 seconds and the store's timeout 200 ms: a call held by the store would fail at its deadline.
                #expect(slowest < .seconds(3))
                #expect(failuresReported > 0)
                let recovery = try #require(recoveredAt) - upAt
                #expect(recovery < .seconds(15))
            }
        }
    }
}
#endif
