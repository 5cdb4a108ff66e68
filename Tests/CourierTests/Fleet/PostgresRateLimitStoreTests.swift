#if Postgres
import Courier
import CourierTesting
import Foundation
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(
    "PostgresRateLimitStore against a real PostgreSQL",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .timeLimit(.minutes(1))
)
struct PostgresRateLimitStoreTests {
    @Test("Table names: plain identifiers only")
    func tableNames() throws {
        #expect(throws: CourierError.self) { try PostgresRateLimitStore.createTableSQL(table: "x; DROP TABLE y") }
        #expect(try PostgresRateLimitStore.createTableSQL(table: "ops.limits").contains("ops.limits ("))
    }

    @Test("8 stores taking blocks of 7 at once from a window of 100: exactly 100 granted, all in one window")
    func concurrentBlocksNeverOverrun() async throws {
        try await PostgresTestServer.withClient { client, table in
            try await PostgresRateLimitStore(client: client, table: table).createTable()
            let stores = try (0..<8).map { _ in try PostgresRateLimitStore(client: client, table: table) }
            let reservations = try await withThrowingTaskGroup(of: [RateLimitReservation].self) { group in
                for store in stores {
                    group.addTask {
                        var taken: [RateLimitReservation] = []
                        for _ in 0..<4 {
                            taken.append(try await store.reserve(7, in: "api:443", limit: 100, window: .seconds(30)))
                        }
                        return taken
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(reservations.reduce(0) { $0 + $1.granted } == 100)
            #expect(Set(reservations.map(\.window)).count == 1)
            #expect(reservations.allSatisfy { (0...7).contains($0.granted) })
            let endsIn = reservations.map { $0.windowEndsAt.timeIntervalSinceNow }
            #expect(endsIn.allSatisfy { $0 > 10 && $0 <= 30 })
        }
    }

    @Test("A new window after the last ended; a release goes back to its own window only")
    func windowsAndRelease() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresRateLimitStore(client: client, table: table)
            try await store.createTable()
            let first = try await store.reserve(10, in: "p", limit: 10, window: .seconds(30))
            #expect(first.granted == 10)
            #expect(try await store.reserve(1, in: "p", limit: 10, window: .seconds(30)).granted == 0)
            try await store.release(4, of: first)
            #expect(try await store.reserve(10, in: "p", limit: 10, window: .seconds(30)).granted == 4)
            // A window of 300 ms, waited out on the database's clock.
            let short = try await store.reserve(10, in: "s", limit: 10, window: .milliseconds(300))
            try await Task.sleep(for: .milliseconds(400))
            let next = try await store.reserve(3, in: "s", limit: 10, window: .seconds(30))
            #expect(next.window == short.window + 1)
            #expect(next.granted == 3)
            // The ended window's slots are worth nothing now: releasing them gives nothing to the next.
            try await store.release(10, of: short)
            #expect(try await store.reserve(10, in: "s", limit: 10, window: .seconds(30)).granted == 7)
            // Another partition has its own window.
            #expect(try await store.reserve(10, in: "q", limit: 10, window: .seconds(30)).granted == 10)
        }
    }

    @Test("An extreme window is clamped, not an error; a deleted row is made again at the next reservation")
    func extremesAndDeletedRow() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresRateLimitStore(client: client, table: table)
            try await store.createTable()
            let long = try await store.reserve(1, in: "p", limit: 5, window: .seconds(Int64.max))
            #expect(long.granted == 1)
            #expect(long.windowEndsAt.timeIntervalSinceNow > 50 * 365 * 86_400)
            _ = try await client.query(PostgresQuery(unsafeSQL: "DELETE FROM \(table)"))
            await #expect(throws: CourierError.self) {
                try await store.reserve(1, in: "p", limit: 5, window: .seconds(1))
            }
            #expect(try await store.reserve(1, in: "p", limit: 5, window: .seconds(1)).granted == 1)
        }
    }

    @Test("What a server said round-trips; a row that does not decode is nothing known")
    func quotas() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresRateLimitStore(client: client, table: table)
            try await store.createTable()
            #expect(try await store.quota(for: "api:443") == nil)
            let quota = RateLimitQuota(
                limit: 100,
                remaining: 42,
                resetsAt: Date(timeIntervalSince1970: 1_900_000_000),
                window: .seconds(60)
            )
            try await store.record(quota, for: "api:443")
            #expect(try await store.quota(for: "api:443") == quota)
            _ = try await client.query(
                PostgresQuery(unsafeSQL: "UPDATE \(table) SET quota = '{\"remaining\":\"lots\"}'::jsonb")
            )
            #expect(try await store.quota(for: "api:443") == nil)
        }
    }

    @Test("The database down: reserve throws, and the limiter goes on paced by the server alone, with an event")
    func databaseDown() async throws {
        // A port nothing listens on.
        let down = PostgresClient(configuration: PostgresTestServer.configuration(port: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await down.run() }
            defer { group.cancelAll() }
            let store = try PostgresRateLimitStore(client: down)
            let events = Locked<[RateLimitEvent]>([])
            var policy = RateLimitPolicy(
                sharedLimit: .init(maxRequests: 5, per: .seconds(2)),
                onEvent: { event in events.withLock { $0.append(event) } }
            )
            policy.storeTimeout = .milliseconds(500)
            let limiter = RateLimiter(policy, store: store)
            let client = Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: MockTransport { _ in .ok },
                middleware: [.rateLimiting(limiter)]
            )
            // Each call succeeds: the store holds none of them past its timeout (a hang would reach the suite's
            // time limit). That no call waits past its deadline is SharedLimitTests' business, on a manual clock:
            // under a busy test run, wall-clock bounds here would measure the machine.
            for _ in 0..<3 {
                let status = try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!)).1
                    .statusCode
                #expect(status == 200)
            }
            #expect(events.withLock { $0 }.contains { if case .storeFailed = $0 { true } else { false } })
        }
    }
}
#endif
