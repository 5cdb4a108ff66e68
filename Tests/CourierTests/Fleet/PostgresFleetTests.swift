#if Postgres
import Courier
import CourierTesting
import Foundation
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The PostgreSQL server the Postgres tests use: `COURIER_POSTGRES_URL`, which `Scripts/start-postgres` prints
/// (and `.ci/run` sets). Without it the suites are skipped, saying so — except in CI, where
/// ``PostgresAvailabilityTests`` fails.
enum PostgresTestServer {
    static let url = ProcessInfo.processInfo.environment["COURIER_POSTGRES_URL"].flatMap(URL.init(string:))

    /// The key every store of the tests seals its tokens with, in base64: how a replica process gets it, in its
    /// environment.
    static let sealingKeyBase64 = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).base64EncodedString()

    /// ``sealingKeyBase64`` as a key.
    static var sealingKey: PostgresSharedTokenStore.SealingKey {
        get throws { try PostgresSharedTokenStore.SealingKey(base64: sealingKeyBase64) }
    }

    static let skipReason: Comment =
        "COURIER_POSTGRES_URL is not set: export COURIER_POSTGRES_URL=$(Scripts/start-postgres)"

    /// The timeout of the cache stores of tests that are not about it: ten seconds rather than the default one.
    /// A store call on a machine busy with the fleet suites (eight replica processes on two cores) can take
    /// longer than a second, a query that opens a connection more so; one such call that timed out failed a
    /// test about something else.
    static let storeTimeout: Duration = .seconds(10)

    /// A cache store on `table` with ``storeTimeout``, for a test that is not about the timeout.
    static func cacheStore(
        _ client: PostgresClient,
        table: String,
        maximumResponseBytes: Int = 1024 * 1024,
        cleanupInterval: Duration = .seconds(60),
        fillLease: Duration? = .seconds(10)
    ) throws -> PostgresHTTPCacheStore {
        try PostgresHTTPCacheStore(
            client: client,
            table: table,
            timeout: storeTimeout,
            maximumResponseBytes: maximumResponseBytes,
            cleanupInterval: cleanupInterval,
            fillLease: fillLease
        )
    }

    static func configuration(port: Int? = nil) -> PostgresClient.Configuration {
        let url = url!
        return PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1",
            port: port ?? url.port ?? 5432,
            username: url.user ?? "courier",
            password: url.password,
            database: url.path.isEmpty ? nil : String(url.path.dropFirst()),
            tls: .disable
        )
    }

    /// Runs `body` with a running client, and a fresh table name it drops afterwards (unless `dropTable` is
    /// false: a client of a server that is down would wait for a connection to drop it).
    static func withClient<Result: Sendable>(
        configuration: PostgresClient.Configuration = configuration(),
        dropTable: Bool = true,
        _ body: @escaping @Sendable (PostgresClient, String) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration)
        let table = "courier_test_\(UInt32.random(in: .min ... .max))"
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            do {
                let result = try await body(client, table)
                if dropTable { _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)")) }
                return result
            } catch {
                if dropTable { _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(table)")) }
                throw error
            }
        }
    }

    /// Runs `body` while another session of `client` holds the lock `lockSQL` takes, in a transaction that ends
    /// when `body` does, however it ends.
    ///
    /// A test that released the lock only after its last `try` kept it when a step threw: the table's `DROP`
    /// in ``withClient(configuration:dropTable:_:)`` then waited for the transaction forever, and the test failed
    /// on its time limit a minute later, hiding the step's error. And a session that failed before it took the
    /// lock left the test waiting for it; here its error is thrown instead.
    static func whileLocked<Result: Sendable>(
        _ client: PostgresClient,
        _ lockSQL: String,
        _ body: () async throws -> Result
    ) async throws -> Result {
        let (locked, lockTaken) = AsyncStream<Void>.makeStream()
        let (release, releaseLock) = AsyncStream<Void>.makeStream()
        let holder = Task {
            defer { lockTaken.finish() }
            try await client.withConnection { connection in
                let logger = Logger(label: "lock")
                try await connection.withTransaction(logger: logger) { connection in
                    _ = try await connection.query(PostgresQuery(unsafeSQL: lockSQL), logger: logger)
                    lockTaken.yield()
                    for await _ in release { break }
                }
            }
        }
        var taken = false
        for await _ in locked {
            taken = true
            break
        }
        guard taken else {
            // The session ended without the lock: its error says why.
            try await holder.join()
            throw CourierError(.invalidRequest, message: "the session ended without taking the lock")
        }
        let result: Result
        do {
            result = try await body()
        } catch {
            releaseLock.finish()
            try? await holder.join()
            throw error
        }
        releaseLock.finish()
        try await holder.join()
        return result
    }
}

@Suite("PostgreSQL tests run in CI")
struct PostgresAvailabilityTests {
    @Test("In CI (CI=true), COURIER_POSTGRES_URL is set, so the PostgreSQL suites run rather than skip")
    func serverIsThereInCI() {
        let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
        #expect(!isCI || PostgresTestServer.url != nil, "CI must start PostgreSQL (Scripts/start-postgres)")
    }
}

@Suite(
    "PostgresSharedTokenStore against a real PostgreSQL",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .timeLimit(.minutes(1))
)
struct PostgresSharedTokenStoreTests {
    @Test("Table names: plain identifiers only; anything that could carry SQL is refused")
    func tableNames() throws {
        #expect(try PostgresSharedTokenStore.createTableSQL(table: "ops.courier_tokens").contains("ops.courier_tokens"))
        for bad in [
            "tokens; DROP TABLE users", "Tokens", "\"tokens\"", "1tokens", "a.b.c", "", "tokens--", "t\u{0}",
            String(repeating: "a", count: 64),
        ] {
            #expect(throws: CourierError.self, "\(bad)") { try PostgresSharedTokenStore.createTableSQL(table: bad) }
        }
    }

    @Test("The lease: taken once, held against others, re-read under it, compare-and-set on the version")
    func leaseContract() async throws {
        try await PostgresTestServer.withClient { client, table in
            let a = try PostgresSharedTokenStore(
                client: client,
                name: "api",
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            let b = try PostgresSharedTokenStore(
                client: client,
                name: "api",
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            try await a.createTable()

            #expect(try await a.token() == nil)
            #expect(try await a.beginRefresh(after: 0, holder: "a", lease: .seconds(30)) == .acquired(nil))
            guard case .held(let left) = try await b.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) else {
                Issue.record("b took a lease a holds")
                return
            }
            #expect(left > .seconds(10) && left <= .seconds(30))
            let first = SharedToken("t1", refreshToken: "r1", expiresAt: Date(timeIntervalSince1970: 2e9), version: 1)
            #expect(try await a.finishRefresh(first, holder: "a") == first)
            #expect(try await b.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) == .newer(first))
            #expect(try await b.beginRefresh(after: 1, holder: "b", lease: .seconds(30)) == .acquired(first))
            // a's token is not the next version any more once b stored v2: stored nothing.
            let second = SharedToken("t2", version: 2)
            #expect(try await b.finishRefresh(second, holder: "b") == second)
            #expect(try await a.finishRefresh(SharedToken("late", version: 2), holder: "a") == second)
            let replaced = try await a.replaceToken(SharedToken("signed-in", version: 0))
            #expect(replaced.version == 3)
            #expect(try await b.token() == replaced)
            #expect(try await a.leasesTaken() == 2)
            // A different name in the same table is another token.
            let other = try PostgresSharedTokenStore(
                client: client,
                name: "other-api",
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            #expect(try await other.token() == nil)
        }
    }

    @Test("A crashed holder's lease expires on the database's clock; a failed refresh releases it at once")
    func leaseExpiryAndRelease() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            try await store.createTable()
            // Read before the lease is taken: the lease starts during the call, so on this clock it ends no sooner
            // than 300 ms after `start`, however long the call takes on a busy machine.
            let start = ContinuousClock.now
            _ = try await store.beginRefresh(after: 0, holder: "crashed", lease: .milliseconds(300))
            // The waiter is woken by nothing (the holder is dead): it returns at its timeout, by then the lease
            // has expired, and the next ask takes it. On a busy machine the lease may have ended before b asks at
            // all: then b takes it at once, and in either case no sooner than 300 ms after `start`.
            let asked = try await store.beginRefresh(after: 0, holder: "b", lease: .seconds(30))
            if case .held(let left) = asked {
                #expect(left <= .milliseconds(300))
                try await store.waitForChange(after: 0, timeout: left + .milliseconds(50))
                #expect(try await store.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) == .acquired(nil))
            } else {
                #expect(asked == .acquired(nil))
            }
            #expect(ContinuousClock.now - start >= .milliseconds(300))
            try await store.finishRefresh(nil, holder: "b")
            #expect(try await store.beginRefresh(after: 0, holder: "c", lease: .seconds(30)) == .acquired(nil))
        }
    }

    @Test("A waiter is woken by the holder's NOTIFY, not by its timeout")
    func notifyWakesWaiters() async throws {
        try await PostgresTestServer.withClient { client, table in
            let holder = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            let waiter = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            try await holder.createTable()
            _ = try await holder.beginRefresh(after: 0, holder: "holder", lease: .seconds(30))
            let start = ContinuousClock.now
            async let waited: Void = waiter.waitForChange(after: 0, timeout: .seconds(30))
            // Finishing before the waiter listens is fine too: it checks the row once listening.
            try await holder.finishRefresh(SharedToken("t1", version: 1), holder: "holder")
            try await waited
            #expect(ContinuousClock.now - start < .seconds(10))
            #expect(try await waiter.token()?.value == "t1")
        }
    }

    @Test("renewLease extends the holder's own lease on the database's clock, never one released or another's")
    func leaseRenewal() async throws {
        try await PostgresTestServer.withClient { client, table in
            let store = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            try await store.createTable()
            #expect(try await store.renewLease(holder: "a", lease: .seconds(30)) == false)
            _ = try await store.beginRefresh(after: 0, holder: "a", lease: .milliseconds(300))
            #expect(try await store.renewLease(holder: "b", lease: .seconds(30)) == false)
            #expect(try await store.renewLease(holder: "a", lease: .seconds(30)) == true)
            // Renewed for 30 s: far more than the 300 ms it was taken for, however slow the machine.
            guard case .held(let left) = try await store.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) else {
                Issue.record("b took the lease a renewed")
                return
            }
            #expect(left > .seconds(20))
            // Released, it is nobody's to renew: b takes it.
            try await store.finishRefresh(nil, holder: "a")
            #expect(try await store.renewLease(holder: "a", lease: .seconds(30)) == false)
            #expect(try await store.beginRefresh(after: 0, holder: "b", lease: .seconds(30)) == .acquired(nil))
            #expect(try await store.leasesTaken() == 2)
        }
    }

    @Test("A waiter is woken by its own table only: not by a same-named table in another schema, however spelled")
    func notificationsPerTable() async throws {
        try await PostgresTestServer.withClient { client, table in
            let schemas = ["\(table)_a", "\(table)_b"]
            for schema in schemas { try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)")) }
            do {
                let waiter = try PostgresSharedTokenStore(
                    client: client,
                    table: "\(schemas[0]).tokens",
                    sealingKey: PostgresTestServer.sealingKey
                )
                let other = try PostgresSharedTokenStore(
                    client: client,
                    table: "\(schemas[1]).tokens",
                    sealingKey: PostgresTestServer.sealingKey
                )
                try await waiter.createTable()
                try await other.createTable()
                _ = try await waiter.beginRefresh(after: 0, holder: "holder", lease: .seconds(30))
                // The other schema's token of the same name changes over and over while the waiter waits, every few
                // milliseconds (paced, so that it does not starve the other suites' queries in a full parallel run).
                let noise = Task {
                    while !Task.isCancelled {
                        _ = try? await other.replaceToken(SharedToken("noise", version: 0))
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                }
                // 5 s: long enough for the noise to change the other token several times even when a full parallel
                // run of the suites leaves this test's tasks little time.
                let start = ContinuousClock.now
                try await waiter.waitForChange(after: 0, timeout: .seconds(5))
                noise.cancel()
                _ = await noise.result
                #expect(ContinuousClock.now - start >= .seconds(5), "woken by another schema's table")
                #expect(try await other.token()?.version ?? 0 > 1)

                // One table spelled with its schema by one replica and without it by another: one token.
                let plain = try PostgresSharedTokenStore(
                    client: client,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                )
                let qualified = try PostgresSharedTokenStore(
                    client: client,
                    table: "public.\(table)",
                    sealingKey: PostgresTestServer.sealingKey
                )
                try await plain.createTable()
                _ = try await plain.beginRefresh(after: 0, holder: "holder", lease: .seconds(30))
                let woken = ContinuousClock.now
                async let waited: Void = plain.waitForChange(after: 0, timeout: .seconds(30))
                try await qualified.finishRefresh(SharedToken("t1", version: 1), holder: "holder")
                try await waited
                #expect(ContinuousClock.now - woken < .seconds(10))
            } catch {
                for schema in schemas {
                    _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                }
                throw error
            }
            for schema in schemas { try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE")) }
        }
    }

    @Test("waitForChange's timeout counts from the call: time spent waiting for a connection is part of it")
    func waitForChangeCountsFromTheCall() async throws {
        var one = PostgresTestServer.configuration()
        one.options.maximumConnections = 1
        try await PostgresTestServer.withClient(configuration: one) { client, table in
            let store = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            try await store.createTable()
            _ = try await store.beginRefresh(after: 0, holder: "holder", lease: .seconds(50))
            // The pool's one connection, held for 6 s of real time by another query; the waiter's timeout is 10 s.
            // Counted from the call, the wait ends 10 s after it; added to the time spent getting a connection, it
            // would end after 16 s; a wait that ignored its timeout would end when it had a connection, at 6 s.
            let holding = Arrivals()
            let holder = Task {
                try await client.withConnection { _ in
                    holding.arrive()
                    try await Task.sleep(for: .seconds(6))
                }
            }
            await holding.wait(for: 1)
            let start = ContinuousClock.now
            try await store.waitForChange(after: 0, timeout: .seconds(10))
            let waited = ContinuousClock.now - start
            try await holder.join()
            #expect(waited >= .seconds(10) && waited < .seconds(15), "waited \(waited)")
        }
    }

    @Test("8 replicas × 50 concurrent 401s on one PostgreSQL: exactly one refresh, no family revoked")
    func oneRefreshAcrossReplicas() async throws {
        try await PostgresTestServer.withClient { client, table in
            let server = RotatingTokenServer()
            try await PostgresSharedTokenStore(client: client, table: table, sealingKey: PostgresTestServer.sealingKey)
                .createTable()
            let events = SharingEvents()
            let clients = try (0..<8).map { index in
                let store = try PostgresSharedTokenStore(
                    client: client,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                )
                // The store's speed is not this test's subject: in a full parallel run of the suites four replicas
                // once waited more than the default 5 s for a thread, refreshed locally and revoked the family.
                let sharing = TokenRefresher.Sharing(
                    store: store,
                    holder: "replica-\(index)",
                    storeTimeout: .seconds(30),
                    onEvent: events.record
                )
                let refresher = TokenRefresher(token: RotatingTokenServer.token(1), sharing: sharing) { replaced in
                    try server.refresh(with: replaced.refreshToken)
                }
                return Client(
                    baseURL: exampleBaseURL,
                    transport: server.api(),
                    middleware: [.authenticating(with: refresher)]
                )
            }
            server.expireAccessToken()
            let (ok, errors) = await withTaskGroup(of: (ok: Int, errors: [String]).self) { group in
                for client in clients { group.addTask { await sendConcurrently(50, through: client) } }
                return await group.reduce(into: (ok: 0, errors: [String]())) {
                    $0.ok += $1.ok
                    $0.errors += $1.errors
                }
            }
            #expect(errors.count == 0, "first: \(errors.first ?? "none"); events: \(events.all)")
            #expect(ok == 400)
            #expect(server.refreshes == 1)
            #expect(server.reuses == 0)
            #expect(
                try await PostgresSharedTokenStore(
                    client: client,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                ).leasesTaken() == 1
            )
        }
    }

    @Test("The database is down: the replica refreshes locally within the store timeout and reports it")
    func databaseDown() async throws {
        // A port bound and never listened on for the whole test: every connection attempt is refused, and no
        // parallel test can take the port meanwhile.
        let closed = try RefusingPort()
        try await PostgresTestServer.withClient(
            configuration: PostgresTestServer.configuration(port: closed.port),
            dropTable: false
        ) {
            client,
            table in
            let server = RotatingTokenServer()
            let events = SharingEvents()
            let sharing = TokenRefresher.Sharing(
                store: try PostgresSharedTokenStore(
                    client: client,
                    table: table,
                    sealingKey: PostgresTestServer.sealingKey
                ),
                storeTimeout: .seconds(1),
                onEvent: events.record
            )
            // The store's time limit runs on a manual clock, so that the test checks the limit, not how fast a
            // busy machine runs the suite (on the continuous clock, 1 s took 13 s in a full run of every trait).
            let clock = ManualClock()
            let refresher = TokenRefresher(token: RotatingTokenServer.token(1), clock: clock, sharing: sharing) {
                replaced in
                try server.refresh(with: replaced.refreshToken)
            }
            let api = Client(
                baseURL: exampleBaseURL,
                transport: server.api(),
                middleware: [.authenticating(with: refresher)]
            )
            server.expireAccessToken()
            let (_, response) = try await clock.run { try await api.send(authenticatedRequest()) }
            #expect(response.statusCode == 200)
            // Refused at once or abandoned at the store's time limit: never later than that limit.
            #expect(clock.now.offset <= .seconds(1))
            #expect(server.refreshes == 1)
            #expect(events.all == ["storeFailed beginRefresh"])
        }
        withExtendedLifetime(closed) {}
    }
}
#endif
