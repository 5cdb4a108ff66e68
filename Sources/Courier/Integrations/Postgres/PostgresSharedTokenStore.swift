#if Postgres
public import PostgresNIO
import Foundation

/// A ``SharedTokenStore`` in PostgreSQL (trait `Postgres`): the replicas of a fleet share one token per
/// ``name`` and take turns refreshing it.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration)   // run it: `await postgres.run()` in your service group
/// let store = try PostgresSharedTokenStore(client: postgres, name: "billing-api")
/// try await store.createTable()
/// let auth = TokenRefresher(token: stored, sharing: .init(store: store)) { replaced in ... }
/// ```
///
/// One row per token name, in a table Courier creates (``createTableSQL(table:)``). Each step is one
/// transaction that locks the row with `SELECT … FOR UPDATE`, so the lease, the version check and the re-read
/// under the lease are atomic whatever the replicas do; leases are measured on the database's clock
/// (`clock_timestamp()`), never on the replicas'. A waiting replica `LISTEN`s on a channel named after the table
/// and is woken by the `NOTIFY` that the holder's `finishRefresh` sends at its commit: no polling.
///
/// The token and its refresh token are stored as given: protect the table like the service's other secrets
/// (its own role, no access for readers of the rest of the database).
public final class PostgresSharedTokenStore: SharedTokenStore {
    /// The token's name: several refreshers (one per API) share one table under different names.
    public let name: String
    /// The table's name.
    public var table: String { tableName.description }

    private let client: PostgresClient
    private let tableName: PostgresTableName
    private let logger: Logger
    /// Whether this store has made sure its row exists.
    private let rowEnsured = LockedState(false)

    /// Creates a store of the token `name` in `table` on `client`, which the caller runs.
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` when `table` is not a plain, optionally schema-qualified,
    ///   lowercase identifier.
    public init(
        client: PostgresClient,
        name: String = "default",
        table: String = "courier_shared_tokens",
        logger: Logger = Logger(label: "Courier.PostgresSharedTokenStore")
    ) throws(CourierError) {
        self.client = client
        self.name = name
        self.tableName = try PostgresTableName(table)
        self.logger = logger
    }

    /// The SQL that creates the table, as ``createTable()`` runs it.
    public static func createTableSQL(table: String = "courier_shared_tokens") throws(CourierError) -> String {
        let table = try PostgresTableName(table)
        return """
            CREATE TABLE IF NOT EXISTS \(table) (
                name text PRIMARY KEY,
                version bigint NOT NULL DEFAULT 0,
                value text,
                refresh_token text,
                expires_at timestamptz,
                lease_holder text,
                lease_expires_at timestamptz,
                leases_taken bigint NOT NULL DEFAULT 0
            )
            """
    }

    /// Creates the table if it does not exist.
    public func createTable() async throws {
        try await client.query(PostgresQuery(unsafeSQL: try Self.createTableSQL(table: table)), logger: logger)
    }

    /// How many leases were taken for this token since its row was made: how many refreshes began in the fleet.
    public func leasesTaken() async throws -> Int {
        try await ensureRow()
        let rows = try await client.query(
            "SELECT leases_taken FROM \(unescaped: table) WHERE name = \(name)",
            logger: logger
        )
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// The current token, or `nil`.
    public func token() async throws -> SharedToken? {
        try await ensureRow()
        let rows = try await client.query(
            "SELECT version, value, refresh_token, expires_at FROM \(unescaped: table) WHERE name = \(name)",
            logger: logger
        )
        for try await (version, value, refreshToken, expiresAt) in rows.decode((Int, String?, String?, Date?).self) {
            return value.map { SharedToken($0, refreshToken: refreshToken, expiresAt: expiresAt, version: version) }
        }
        return nil
    }

    /// Takes the lease in one transaction: the row locked, the version compared, the lease taken, the token read.
    public func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        try await ensureRow()
        let milliseconds = Self.milliseconds(lease)
        return try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in
                let row = try await self.lockedRow(connection)
                if let token = row.token, token.version > version { return .newer(token) }
                if let other = row.holder, other != holder, let left = row.leaseLeft, left > 0 {
                    return .held(expiresIn: NetworkNumber.duration(seconds: left))
                }
                try await connection.query(
                    """
                    UPDATE \(unescaped: self.table) SET lease_holder = \(holder),
                        lease_expires_at = clock_timestamp() + (\(milliseconds)::bigint * interval '1 millisecond'),
                        leases_taken = leases_taken + 1
                    WHERE name = \(self.name)
                    """,
                    logger: self.logger
                )
                return .acquired(row.token)
            }
        }
    }

    /// Extends `holder`'s lease to `lease` from now, on the database's clock, if the row still names `holder`.
    public func renewLease(holder: String, lease: Duration) async throws -> Bool {
        try await ensureRow()
        let rows = try await client.query(
            """
            UPDATE \(unescaped: table)
            SET lease_expires_at = clock_timestamp() + (\(Self.milliseconds(lease))::bigint * interval '1 millisecond')
            WHERE name = \(name) AND lease_holder = \(holder) RETURNING version
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Stores `token` if it is the next version and releases `holder`'s lease, in one transaction that notifies
    /// the waiters at its commit.
    @discardableResult
    public func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? {
        try await ensureRow()
        return try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in
                let row = try await self.lockedRow(connection)
                var current = row.token
                if let token, token.version == (row.token?.version ?? row.version) + 1 {
                    try await connection.query(
                        """
                        UPDATE \(unescaped: self.table) SET version = \(token.version), value = \(token.value),
                            refresh_token = \(token.refreshToken), expires_at = \(token.expiresAt)
                        WHERE name = \(self.name)
                        """,
                        logger: self.logger
                    )
                    current = token
                }
                if row.holder == holder {
                    try await connection.query(
                        """
                        UPDATE \(unescaped: self.table) SET lease_holder = NULL, lease_expires_at = NULL
                        WHERE name = \(self.name)
                        """,
                        logger: self.logger
                    )
                }
                try await self.notify(connection)
                return current
            }
        }
    }

    /// Stores `token` as the next version and notifies the waiters.
    public func replaceToken(_ token: SharedToken) async throws -> SharedToken {
        try await ensureRow()
        let rows = try await client.query(
            """
            UPDATE \(unescaped: table) SET version = version + 1, value = \(token.value),
                refresh_token = \(token.refreshToken), expires_at = \(token.expiresAt)
            WHERE name = \(name)
            RETURNING version, pg_notify(\(channel), to_regclass(\(table))::oid::bigint || ' ' || \(name))
            """,
            logger: logger
        )
        var stored = token
        for try await (version, _) in rows.decode((Int, String).self) { stored.version = version }
        return stored
    }

    /// `LISTEN`s on the table's channel, checks the row once listening (a change just before is not missed),
    /// then returns at the first notification for this token, or after `timeout`.
    public func waitForChange(after version: Int, timeout: Duration) async throws {
        try await ensureRow()
        try await client.withConnection { connection in
            let notification = try await self.notification(connection)
            try await connection.listen(on: channel) { notifications in
                let row = try await self.row(connection)
                let leased = row.holder != nil && (row.leaseLeft ?? 0) > 0
                if (row.token?.version ?? row.version) > version || !leased { return }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await change in notifications where change.payload == notification { return }
                    }
                    group.addTask { try await Task.sleep(for: timeout) }
                    defer { group.cancelAll() }
                    try await group.next()
                }
            }
        }
    }

    // MARK: Rows

    private struct Row {
        var version: Int
        var token: SharedToken?
        var holder: String?
        /// Seconds until the lease ends, on the database's clock; negative once it has.
        var leaseLeft: Double?
    }

    /// The notification channel: the table's name without its schema, since a channel is an identifier of at
    /// most 63 bytes and a schema-qualified name may be longer.
    private var channel: String { tableName.unqualified }

    /// What a change of this token notifies on ``channel``: the table's object identifier and the token's name,
    /// so that a waiter is woken by its own token only, not by a token of the same name in a same-named table of
    /// another schema, however each replica spells the table (with or without its schema).
    private func notification(_ connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query("SELECT to_regclass(\(table))::oid::bigint", logger: logger)
        for try await oid in rows.decode(Int.self) { return "\(oid) \(name)" }
        throw CourierError(.invalidRequest, message: "the shared token table \(table) is missing")
    }

    private func notify(_ connection: PostgresConnection) async throws {
        try await connection.query(
            "SELECT pg_notify(\(channel), to_regclass(\(table))::oid::bigint || ' ' || \(name))",
            logger: logger
        )
    }

    /// `lease` in whole milliseconds, for an interval computed on the database's clock; at least 1.
    private static func milliseconds(_ lease: Duration) -> Int64 {
        let (seconds, attoseconds) = lease.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return max(1, overflow || sumOverflow ? .max : sum)
    }

    private func lockedRow(_ connection: PostgresConnection) async throws -> Row {
        try await row(connection, suffix: " FOR UPDATE")
    }

    private func row(_ connection: PostgresConnection, suffix: String = "") async throws -> Row {
        let rows = try await connection.query(
            """
            SELECT version, value, refresh_token, expires_at, lease_holder,
                EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))::float8
            FROM \(unescaped: table) WHERE name = \(name)\(unescaped: suffix)
            """,
            logger: logger
        )
        let columns = (Int, String?, String?, Date?, String?, Double?).self
        for try await (version, value, refreshToken, expiresAt, holder, left) in rows.decode(columns) {
            let token = value.map {
                SharedToken($0, refreshToken: refreshToken, expiresAt: expiresAt, version: version)
            }
            return Row(version: version, token: token, holder: holder, leaseLeft: left)
        }
        throw CourierError(.invalidRequest, message: "the shared token row \(name) is missing from \(table)")
    }

    private func ensureRow() async throws {
        if rowEnsured.withLock({ $0 }) { return }
        try await client.query(
            "INSERT INTO \(unescaped: table) (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING",
            logger: logger
        )
        rowEnsured.withLock { $0 = true }
    }
}
#endif
