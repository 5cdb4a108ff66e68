#if COURIER_BENCHMARK_POSTGRES
import Benchmark
import BenchmarkSupport
import Courier
import CourierTesting
import Foundation
import Logging
import PostgresNIO

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// (11) The fleet's stores (issue 28): what a call costs through the fleet's stack (retry, authentication with a
/// shared token store, rate limiting with a shared limit, status validation) over the in-memory transport, with
/// Courier's PostgreSQL stores against the same stack with the in-memory ones, side by side (see `Paired`).
///
/// The token is valid, so no call refreshes; the shared limit (a million a minute, blocks of up to 100) leaves
/// quota in a replica's block, so a serial caller reserves 100 slots every 100 calls after its first blocks, and a
/// call that finds a slot in its block makes no round trip (`PostgresRoundTripTests` proves it byte by byte).
/// Needs `COURIER_BENCHMARK_POSTGRES=1` at build time and a server in `COURIER_POSTGRES_URL`
/// (`Scripts/start-postgres`); the names start with "Loopback PostgreSQL:", so `--skip "Loopback.*"` leaves them out.
func registerFleetStoreBenchmarks() {
    guard let url = ProcessInfo.processInfo.environment["COURIER_POSTGRES_URL"].flatMap(URL.init(string:)) else {
        return
    }
    let fleet = FleetStacks(url: url)
    for width in [1, 16] {
        Paired.register(
            "Loopback PostgreSQL: fleet stack, \(width == 1 ? "serial" : "16 concurrent"), PostgreSQL stores vs in-memory stores",
            calls: width == 1 ? 1_000 : 4_000,
            maxDuration: .seconds(10),
            setup: { try await fleet.start() },
            teardown: { fleet.stop() },
            baseline: { calls in try await fleet.send(calls, width: width, through: fleet.inMemory) },
            candidate: { calls in try await fleet.send(calls, width: width, through: fleet.postgres) }
        )
    }
}

/// The same stack twice: over the in-memory stores and over PostgreSQL's.
final class FleetStacks: Sendable {
    private let database: PostgresClient
    private let runner = Locked<Task<Void, Never>?>(nil)
    private let tokens: PostgresSharedTokenStore
    private let quotas: PostgresRateLimitStore
    private let tables: [String]
    let inMemory: Client
    let postgres: Client

    init(url: URL) {
        database = PostgresClient(
            configuration: .init(
                host: url.host ?? "127.0.0.1",
                port: url.port ?? 5432,
                username: url.user ?? "courier",
                password: url.password,
                database: url.path.isEmpty ? nil : String(url.path.dropFirst()),
                tls: .disable
            )
        )
        let table = "courier_benchmark_\(UInt32.random(in: .min ... .max))"
        tables = [table, "\(table)_quota"]
        // Benchmark fixtures: a fixed key and table names that are valid, so neither initializer throws.
        let key = try! PostgresSharedTokenStore.SealingKey((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        tokens = try! PostgresSharedTokenStore(client: database, table: tables[0], sealingKey: key)
        quotas = try! PostgresRateLimitStore(client: database, table: tables[1])
        inMemory = Self.stack(tokens: InMemorySharedTokenStore(), quotas: InMemoryRateLimitStore())
        postgres = Self.stack(tokens: tokens, quotas: quotas)
    }

    private static func stack(tokens: any SharedTokenStore, quotas: any RateLimitStore) -> Client {
        let refresher = TokenRefresher(
            token: .init("access-1", expiresIn: .seconds(86_400)),
            sharing: .init(store: tokens)
        ) { _ in .init("access-1", expiresIn: .seconds(86_400)) }
        let limiter = RateLimiter(
            RateLimitPolicy(sharedLimit: .init(maxRequests: 1_000_000, per: .seconds(60), blockSize: 100)),
            store: quotas
        )
        return Client(
            baseURL: URL(string: "http://127.0.0.1:8080")!,
            transport: InMemoryTransport(),
            middleware: [
                .retry(.default), .authenticating(with: refresher), .rateLimiting(limiter), .validatingStatus(),
            ]
        )
    }

    /// Runs the client and makes the tables.
    func start() async throws {
        let database = database
        runner.withLock { $0 = Task { await database.run() } }
        try await tokens.createTable()
        try await quotas.createTable()
    }

    /// Drops the tables and stops the client.
    func stop() {
        let (database, tables, runner) = (database, tables, runner)
        Task {
            for table in tables {
                _ = try? await database.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)"))
            }
            runner.withLock { $0 }?.cancel()
        }
    }

    /// `calls` calls through `client`, `width` at a time.
    func send(_ calls: Int, width: Int, through client: Client) async throws {
        let request = Fixtures.request
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<width {
                group.addTask {
                    for _ in stride(from: lane, to: calls, by: width) { blackHole(try await client.send(request)) }
                }
            }
            try await group.waitForAll()
        }
    }
}
#endif
