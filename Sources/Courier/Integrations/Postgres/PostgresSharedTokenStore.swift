#if Postgres
public import PostgresNIO
import Foundation

/// A ``SharedTokenStore`` in PostgreSQL (trait `Postgres`): the replicas of a fleet share one token per
/// ``name`` and take turns refreshing it.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration)   // run it: `await postgres.run()` in your service group
/// let key = try PostgresSharedTokenStore.SealingKey(base64: environment["TOKEN_SEALING_KEY"]!)
/// let store = try PostgresSharedTokenStore(client: postgres, name: "billing-api", sealingKey: key)
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
/// The token and its refresh token are **sealed** (AES-256-GCM under a ``SealingKey`` every replica is given,
/// which the database never sees): whoever reads the table, a backup or a replication stream without the key
/// learns neither, and cannot alter them unnoticed. Each sealed value is bound to its place (the table, the
/// token's name, the column, the row's version), so a value copied to another row, column or version does not
/// open either. The version, the expiry and the lease are stored in clear: they are not secrets.
///
/// A stored value that does not open with the store's keys (a replica given another key, a value altered or
/// moved) makes the step that reads it throw ``CourierError/Code/decodingFailed``, which the ``TokenRefresher``
/// reports and handles like any store failure (``TokenRefresher/Sharing/Event/storeFailed(operation:error:)``):
/// never a crash, never a value taken in clear. Such a replica takes no lease and never replaces the fleet's token
/// through ``finishRefresh(_:holder:)``; ``replaceToken(_:)`` (a token set on a refresher) never opens the stored
/// token, so it stores one sealed with the current key over one that does not open.
///
/// To rotate the key without a replica meeting a token it cannot open: first give every replica the new key in
/// `previousSealingKeys`; then make it every replica's `sealingKey`, with the old one in `previousSealingKeys` (the
/// stored token, sealed with the old key, still opens until the next refresh replaces it); then drop the old key.
/// A replica that finds a newer token it cannot open does not refresh by itself (its refresh token has been used):
/// its refresh fails with ``CourierError/Code/refreshFailed`` until it has the key.
public final class PostgresSharedTokenStore: SharedTokenStore {
    /// The token's name: several refreshers (one per API) share one table under different names.
    public let name: String
    /// The table's name.
    public var table: String { tableName.description }

    private let client: PostgresClient
    private let tableName: PostgresTableName
    private let logger: Logger
    private let sealer: PostgresTokenSealer
    /// The table, schema-qualified as the database resolves it, once this store has made sure its row exists:
    /// what the sealed values are bound to, however each replica spells the table.
    private let resolvedTable = LockedState<String?>(nil)

    /// Creates a store of the token `name` in `table` on `client`, which the caller runs, that seals the tokens
    /// with `sealingKey`.
    ///
    /// - Parameters:
    ///   - client: The PostgreSQL client, which the caller runs.
    ///   - name: The token's name: one row per name, so several refreshers share a table.
    ///   - table: The table's name, `courier_shared_tokens` by default.
    ///   - sealingKey: The key every replica seals and opens the tokens with.
    ///   - previousSealingKeys: Keys being rotated out: tokens sealed with them still open, none is sealed with
    ///     them.
    ///   - logger: Where the store's queries are logged (at trace level, by postgres-nio).
    /// - Throws: ``CourierError/Code/invalidRequest`` when `table` is not a plain, optionally schema-qualified,
    ///   lowercase identifier.
    public init(
        client: PostgresClient,
        name: String = "default",
        table: String = "courier_shared_tokens",
        sealingKey: SealingKey,
        previousSealingKeys: [SealingKey] = [],
        logger: Logger = Logger(label: "Courier.PostgresSharedTokenStore")
    ) throws(CourierError) {
        self.client = client
        self.name = name
        self.tableName = try PostgresTableName(table)
        self.sealer = PostgresTokenSealer(current: sealingKey, previous: previousSealingKeys)
        self.logger = logger
    }

    /// The SQL that creates the table, as ``createTable()`` runs it.
    ///
    /// The token and its refresh token are in `sealed_value` and `sealed_refresh_token` (bytea: a format byte, the
    /// nonce, the ciphertext and the tag). A table made before the tokens were sealed has clear-text `value` and
    /// `refresh_token` columns instead, which this store never reads (every step fails on the missing columns):
    /// with the replicas stopped, drop that table and make it again; the fleet's next refresh stores a sealed
    /// token.
    public static func createTableSQL(table: String = "courier_shared_tokens") throws(CourierError) -> String {
        let table = try PostgresTableName(table)
        return """
            CREATE TABLE IF NOT EXISTS \(table) (
                name text PRIMARY KEY,
                version bigint NOT NULL DEFAULT 0,
                sealed_value bytea,
                sealed_refresh_token bytea,
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
    ///
    /// - Throws: ``CourierError/Code/decodingFailed`` when the stored token does not open with this store's keys.
    public func token() async throws -> SharedToken? {
        let table = try await ensureRow()
        let row = try await client.withConnection { try await self.row($0) }
        return try opened(row, in: table)
    }

    /// Takes the lease in one transaction: the row locked, the version compared, the lease taken, the token read.
    ///
    /// - Throws: ``CourierError/Code/decodingFailed`` when the stored token does not open with this store's keys
    ///   (then no lease is taken).
    public func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        let table = try await ensureRow()
        let milliseconds = PostgresInterval.milliseconds(lease)
        let lease = try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) {
                connection -> Result<SharedRefreshLease, CourierError> in
                let row = try await self.lockedRow(connection)
                // Opened before the lease is taken: a token this replica cannot open takes no lease from the others.
                let current = Result { () throws(CourierError) in try self.opened(row, in: table) }
                switch current {
                case .success(let token?) where token.version > version: return .success(.newer(token))
                case .failure(let error) where row.version > version: return .failure(error)
                default: break
                }
                if let other = row.holder, other != holder, let left = row.leaseLeft, left > 0 {
                    return .success(.held(expiresIn: NetworkNumber.duration(seconds: left)))
                }
                guard case .success(let token) = current else { return current.map { .acquired($0) } }
                try await connection.query(
                    """
                    UPDATE \(unescaped: self.table) SET lease_holder = \(holder),
                        lease_expires_at = clock_timestamp() + (\(milliseconds)::bigint * interval '1 millisecond'),
                        leases_taken = leases_taken + 1
                    WHERE name = \(self.name)
                    """,
                    logger: self.logger
                )
                return .success(.acquired(token))
            }
        }
        // Thrown outside the transaction, so that the caller sees this store's error, not a transaction's.
        return try lease.get()
    }

    /// Extends `holder`'s lease to `lease` from now, on the database's clock, if the row still names `holder`.
    public func renewLease(holder: String, lease: Duration) async throws -> Bool {
        try await ensureRow()
        let rows = try await client.query(
            """
            UPDATE \(unescaped: table)
            SET lease_expires_at = clock_timestamp() + (\(PostgresInterval.milliseconds(lease))::bigint * interval '1 millisecond')
            WHERE name = \(name) AND lease_holder = \(holder) RETURNING version
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// Stores `token` if it is the next version and releases `holder`'s lease, in one transaction that notifies
    /// the waiters at its commit.
    ///
    /// - Throws: ``CourierError/Code/decodingFailed`` when the stored token does not open with this store's keys:
    ///   then `token` is not stored (a replica given another key never replaces the fleet's token), and the lease
    ///   is released all the same.
    @discardableResult
    public func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? {
        let table = try await ensureRow()
        let current = try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in
                let row = try await self.lockedRow(connection)
                // A replica that cannot open the fleet's token (given another key) never replaces it here.
                let stored = Result { () throws(CourierError) in try self.opened(row, in: table) }
                var current = stored
                if let token, token.version == row.version + 1, case .success = stored {
                    current = .success(try await self.store(token, in: table, connection))
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
        // Thrown after the commit: the lease is released even when the stored token does not open.
        return try current.get()
    }

    /// Stores `token` as the next version and notifies the waiters, in one transaction; it never opens the stored
    /// token, so it replaces one that does not open with this store's keys.
    public func replaceToken(_ token: SharedToken) async throws -> SharedToken {
        let table = try await ensureRow()
        return try await client.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in
                var next = token
                next.version = try await self.lockedRow(connection).version + 1
                let stored = try await self.store(next, in: table, connection)
                try await self.notify(connection)
                return stored
            }
        }
    }

    /// `LISTEN`s on the table's channel, checks the row once listening (a change just before is not missed),
    /// then returns at the first notification for this token, or once `timeout` has passed since the call: the
    /// time it took to get a connection and listen is part of it, not added to it.
    public func waitForChange(after version: Int, timeout: Duration) async throws {
        // At most a year: an instant that far is never reached, and one past the clock's range would trap.
        let end = ContinuousClock.now.advanced(by: min(timeout, .seconds(365 * 86_400)))
        try await ensureRow()
        try await client.withConnection { connection in
            let notification = try await self.notification(connection)
            try await connection.listen(on: channel) { notifications in
                let row = try await self.row(connection)
                let leased = row.holder != nil && (row.leaseLeft ?? 0) > 0
                if row.version > version || !leased { return }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await change in notifications where change.payload == notification { return }
                    }
                    group.addTask { try await Task.sleep(until: end, clock: .continuous) }
                    defer { group.cancelAll() }
                    try await group.next()
                }
            }
        }
    }

    // MARK: Rows

    /// The row as stored: its token still sealed.
    private struct Row {
        /// The version of the token stored (0: none yet).
        var version: Int
        var sealedValue: Data?
        var sealedRefreshToken: Data?
        var expiresAt: Date?
        var holder: String?
        /// Seconds until the lease ends, on the database's clock; negative once it has.
        var leaseLeft: Double?
    }

    /// Where the secret in `column` of this token's row at `version` belongs, in `table` as the database resolves
    /// it.
    private func place(
        _ column: PostgresTokenSealer.Column,
        version: Int,
        in table: String
    ) -> PostgresTokenSealer.Place {
        PostgresTokenSealer.Place(table: table, name: name, column: column, version: version)
    }

    /// The token `row` holds, opened; `nil` when it holds none.
    private func opened(_ row: Row, in table: String) throws(CourierError) -> SharedToken? {
        guard let sealedValue = row.sealedValue else { return nil }
        let value = try sealer.open(sealedValue, at: place(.value, version: row.version, in: table))
        var refreshToken: String?
        if let sealed = row.sealedRefreshToken {
            refreshToken = try sealer.open(sealed, at: place(.refreshToken, version: row.version, in: table))
        }
        return SharedToken(value, refreshToken: refreshToken, expiresAt: row.expiresAt, version: row.version)
    }

    /// Writes `token`, sealed, as the row's token at its version, its expiry within what the column holds (see
    /// ``PostgresInterval/date(_:)``: an expiry a server sent as "never", an `expires_in` of 2⁶³ seconds, would
    /// trap in postgres-nio), and returns it as stored.
    private func store(
        _ token: SharedToken,
        in table: String,
        _ connection: PostgresConnection
    ) async throws -> SharedToken {
        var token = token
        token.expiresAt = token.expiresAt.map(PostgresInterval.date)
        let value = try sealer.seal(token.value, at: place(.value, version: token.version, in: table))
        var refreshToken: Data?
        if let secret = token.refreshToken {
            refreshToken = try sealer.seal(secret, at: place(.refreshToken, version: token.version, in: table))
        }
        try await connection.query(
            """
            UPDATE \(unescaped: self.table) SET version = \(token.version), sealed_value = \(value),
                sealed_refresh_token = \(refreshToken), expires_at = \(token.expiresAt)
            WHERE name = \(name)
            """,
            logger: logger
        )
        return token
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

    private func lockedRow(_ connection: PostgresConnection) async throws -> Row {
        try await row(connection, suffix: " FOR UPDATE")
    }

    private func row(_ connection: PostgresConnection, suffix: String = "") async throws -> Row {
        let rows = try await connection.query(
            """
            SELECT version, sealed_value, sealed_refresh_token, expires_at, lease_holder,
                EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))::float8
            FROM \(unescaped: table) WHERE name = \(name)\(unescaped: suffix)
            """,
            logger: logger
        )
        let columns = (Int, Data?, Data?, Date?, String?, Double?).self
        for try await (version, value, refreshToken, expiresAt, holder, left) in rows.decode(columns) {
            return Row(
                version: version,
                sealedValue: value,
                sealedRefreshToken: refreshToken,
                expiresAt: expiresAt,
                holder: holder,
                leaseLeft: left
            )
        }
        throw CourierError(.invalidRequest, message: "the shared token row \(name) is missing from \(table)")
    }

    /// Makes sure the row exists, once per store, and returns the table schema-qualified as the database resolves
    /// it.
    @discardableResult
    private func ensureRow() async throws -> String {
        if let resolved = resolvedTable.withLock({ $0 }) { return resolved }
        try await client.query(
            "INSERT INTO \(unescaped: table) (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING",
            logger: logger
        )
        let rows = try await client.query(
            """
            SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid = to_regclass(\(table))
            """,
            logger: logger
        )
        for try await (schema, relation) in rows.decode((String, String).self) {
            let resolved = "\(schema).\(relation)"
            resolvedTable.withLock { $0 = resolved }
            return resolved
        }
        throw CourierError(.invalidRequest, message: "the shared token table \(table) is missing")
    }
}
#endif
