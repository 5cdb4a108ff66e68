import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if Postgres
import Logging
import PostgresNIO
#endif

/// The Fleet article's Swift code, line for line, compiled and run here: the cache block in every build, the
/// PostgreSQL block with the `Postgres` trait, against the real server CI starts.
@Suite("The Fleet article's code", .timeLimit(.minutes(1)))
struct FleetArticleTests {
    static let article = "Sources/Courier/Documentation.docc/Fleet.md"
    static let tested = "Tests/CourierTests/Documentation/FleetArticleTests.swift"

    @Test("each Swift block of the article is in FleetArticleTests.swift, line for line")
    func blocksAreTested() throws {
        let article = try String(contentsOf: packageRoot.appendingPathComponent(Self.article), encoding: .utf8)
        let file = OpenAPIArticleCodeTests.lines(
            try String(contentsOf: packageRoot.appendingPathComponent(Self.tested), encoding: .utf8)
        )
        let blocks = ReadmeCodeBlocksTests.swiftBlocks(in: article)
        #expect(blocks.count == 3, "the token refresher, the quota and the cache")
        for block in blocks {
            #expect(OpenAPIArticleCodeTests.contains(file, OpenAPIArticleCodeTests.lines(block)), "\(block)")
        }
    }

    @Test("Replicas given one partition secret share a credentialed response through one store")
    func sharedCache() async throws {
        let environment = ["CACHE_PARTITION_SECRET": Data(repeating: 7, count: 32).base64EncodedString()]
        let sharedStore = InMemoryHTTPCacheStore()
        let origin = Locked(0)
        let mock = MockTransport { _ in
            origin.withLock { $0 += 1 }
            return .json(["report": 1], headers: ["Cache-Control": "public, max-age=60"])
        }
        func replica() -> Client {
            let secret = HTTPCache.PartitionSecret(base64: environment["CACHE_PARTITION_SECRET"]!)!
            let cache = HTTPCache(store: sharedStore, partitionSecret: secret)
            return Client(baseURL: exampleBaseURL, transport: mock, middleware: [.caching(cache)])
        }
        var request = URLRequest(url: exampleBaseURL.appendingPathComponent("report"))
        request.setValue("Bearer tenant-a", forHTTPHeaderField: "Authorization")
        _ = try await replica().send(request)
        _ = try await replica().send(request)
        #expect(origin.value == 1)
    }

    #if Postgres
    @Test("The article's quota table is the SQL PostgresRateLimitStore runs")
    func quotaTable() throws {
        let article = try String(contentsOf: packageRoot.appendingPathComponent(Self.article), encoding: .utf8)
        #expect(article.contains("```sql\n" + (try PostgresRateLimitStore.createTableSQL()) + "\n```"))
    }

    @Test(
        "The quota the article builds on PostgreSQL: requests take slots of the fleet's window from the table",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason)
    )
    func sharedQuota() async throws {
        let api = try SocketServer { _ in .keepAlive(status: 200, body: Data("{}".utf8)) }
        defer { api.shutdown() }
        let apiURL = URL(string: api.origin)!
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            let postgres = PostgresClient(configuration: PostgresTestServer.configuration())
            group.addTask { await postgres.run() }
            _ = try await postgres.query("DROP TABLE IF EXISTS courier_rate_limits")

            let quotas = try PostgresRateLimitStore(client: postgres)
            try await quotas.createTable()
            let limiter = RateLimiter(
                RateLimitPolicy(sharedLimit: .init(maxRequests: 6_000, per: .seconds(60))),
                store: quotas
            )
            let client = Client(baseURL: apiURL, middleware: [.retry(.default), .rateLimiting(limiter)])

            for _ in 0..<3 { _ = try await client.send(URLRequest(url: apiURL.appendingPathComponent("items"))) }
            let rows = try await postgres.query("SELECT taken FROM courier_rate_limits")
            var taken: [Int] = []
            for try await count in rows.decode(Int.self) { taken.append(count) }
            #expect(taken == [3])
            _ = try await postgres.query("DROP TABLE courier_rate_limits")
        }
    }

    /// What the token endpoint answers.
    struct TokenReply: Decodable {
        var accessToken: String
        var expiresIn: Int
        var refreshToken: String

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case refreshToken = "refresh_token"
        }
    }

    @Test(
        "The refresher the article builds on PostgreSQL refreshes once with the stored refresh token; a second replica adopts its token",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason)
    )
    func sharedRefresher() async throws {
        let configuration = PostgresTestServer.configuration()
        let environment = ["TOKEN_SEALING_KEY": PostgresTestServer.sealingKeyBase64]
        let (storedAccessToken, storedRefreshToken) = ("access-1", "refresh-1")
        let logger = Logger(label: "fleet-article")
        let presented = Locked<[String]>([])
        let tokenEndpoint = MockTransport {
            MockRoute.post("/oauth/token") { request in
                presented.withLock { $0.append(request.bodyText ?? "") }
                return .json(#"{"access_token": "access-2", "refresh_token": "refresh-2", "expires_in": 3600}"#)
            }
        }
        let tokenClient = Client(baseURL: exampleBaseURL, transport: tokenEndpoint)
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            let postgres = PostgresClient(configuration: configuration)
            group.addTask { await postgres.run() }  // or add it to your ServiceGroup
            let sealingKey = try PostgresSharedTokenStore.SealingKey(base64: environment["TOKEN_SEALING_KEY"]!)
            let store = try PostgresSharedTokenStore(client: postgres, name: "billing-api", sealingKey: sealingKey)
            try await store.createTable()

            let auth = TokenRefresher(
                token: .init(storedAccessToken, refreshToken: storedRefreshToken),
                sharing: .init(store: store, onEvent: { event in logger.notice("\(event)") })
            ) { replaced in
                // `replaced.refreshToken` is the fleet's newest refresh token, read under the lease.
                let reply: TokenReply = try await tokenClient.send(
                    .post(
                        "/oauth/token",
                        body: .form(["grant_type": "refresh_token", "refresh_token": replaced.refreshToken!])
                    )
                )
                return .init(reply.accessToken, expiresIn: .seconds(reply.expiresIn), refreshToken: reply.refreshToken)
            }

            #expect(try await auth.refresh().value == "access-2")
            #expect(presented.value == ["grant_type=refresh_token&refresh_token=refresh-1"])
            let other = TokenRefresher(
                token: .init(storedAccessToken, refreshToken: storedRefreshToken),
                sharing: .init(store: store)
            ) { _ in throw CourierError(.refreshFailed, message: "a second refresh") }
            #expect(try await other.refresh().value == "access-2")
            #expect(presented.value.count == 1)
            _ = try await postgres.query("DELETE FROM courier_shared_tokens WHERE name = 'billing-api'")
        }
    }
    #endif
}
