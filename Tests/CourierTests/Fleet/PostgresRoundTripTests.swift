#if Postgres && os(Linux)
import CourierTesting
import Foundation
import PostgresNIO
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 28's target for the PostgreSQL stores: a call that needs no refresh and finds quota left in its
/// replica's block costs no round trip to the database. The stores reach PostgreSQL through a proxy that counts
/// every byte sent to it.
@Suite(
    "PostgreSQL stores: no round trip on a call that needs no refresh and finds quota in its block",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .timeLimit(.minutes(2))
)
struct PostgresRoundTripTests {
    @Test(
        "100 calls through the fleet's stack with a valid token and slots left in the block send nothing to PostgreSQL"
    )
    func noRoundTrip() async throws {
        let proxy = try TCPProxy(upstreamPort: try #require(PostgresTestServer.url?.port))
        defer { proxy.shutdown() }
        try await PostgresTestServer.withClient { direct, table in
            let quotaTable = "\(table)_quota"
            try await PostgresSharedTokenStore(client: direct, table: table, sealingKey: PostgresTestServer.sealingKey)
                .createTable()
            try await PostgresRateLimitStore(client: direct, table: quotaTable).createTable()
            let proxied = PostgresClient(configuration: PostgresTestServer.configuration(port: proxy.port))
            try await withThrowingTaskGroup(of: Void.self) { group in
                defer { group.cancelAll() }
                group.addTask { await proxied.run() }
                let tokens = try PostgresSharedTokenStore(
                    client: proxied,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                )
                let limiter = RateLimiter(
                    RateLimitPolicy(sharedLimit: .init(maxRequests: 100_000, per: .seconds(60), blockSize: 128)),
                    store: try PostgresRateLimitStore(client: proxied, table: quotaTable)
                )
                let refresher = TokenRefresher(
                    token: .init("access-1", expiresIn: .seconds(3600)),
                    sharing: .init(store: tokens)
                ) { _ in
                    Issue.record("a refresh with a valid token")
                    return .init("access-2", expiresIn: .seconds(3600))
                }
                let sent = Locked(0)
                let client = Client(
                    baseURL: URL(string: "https://api.example.test")!,
                    transport: MockTransport { request in
                        sent.withLock { $0 += 1 }
                        return request.header("Authorization") == "Bearer access-1" ? .ok : .status(401)
                    },
                    middleware: [
                        .retry(.default), .authenticating(with: refresher), .rateLimiting(limiter), .validatingStatus(),
                    ]
                )
                let request = URLRequest(url: URL(string: "https://api.example.test/items")!)
                // One request at a time, until the replica's block holds at least 100 slots (1, 2, 4, … 128).
                var warmUp = 0
                while (limiter.shared?.block("api.example.test:443")?.left ?? 0) < 100 {
                    _ = try await client.send(request)
                    warmUp += 1
                    try #require(warmUp < 1_000, "the block never grew")
                }
                let before = proxy.bytesToServer
                for _ in 0..<100 { _ = try await client.send(request) }
                #expect(proxy.bytesToServer == before, "bytes sent to PostgreSQL during the 100 calls")
                // The proxy does count: the warm-up's reservations went through it.
                #expect(before > 0)
                #expect(sent.withLock { $0 } == warmUp + 100)
                _ = try? await direct.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(quotaTable)"))
            }
        }
    }
}
#endif
