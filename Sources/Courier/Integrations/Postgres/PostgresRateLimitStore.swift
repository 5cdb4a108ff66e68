#if Postgres
public import PostgresNIO
import Foundation

/// A ``RateLimitStore`` in PostgreSQL (trait `Postgres`): the replicas of a fleet split one quota
/// (``RateLimitPolicy/SharedLimit``) and share what servers said about theirs.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration)   // run it: `await postgres.run()` in your service group
/// let store = try PostgresRateLimitStore(client: postgres)
/// try await store.createTable()
/// let limiter = RateLimiter(
///     RateLimitPolicy(sharedLimit: .init(maxRequests: 100, per: .seconds(2))),
///     store: store
/// )
/// ```
///
/// One row per partition, in a table Courier creates (``createTableSQL(table:)``). A reservation is one
/// `UPDATE` of the partition's row: PostgreSQL locks the row for the statement, so the window's count never
/// goes past its limit whatever the replicas do, and every time is on the database's clock
/// (`statement_timestamp()`), never on the replicas'. The window's end is returned as the time left, so a
/// replica whose clock is off waits the right time.
///
/// Rows hold partition keys (by default `host:port`) and counts, never a credential; a partition function of
/// your own should return a hash of a credential, not the credential (``RateLimitPolicy/partition``).
public final class PostgresRateLimitStore: RateLimitStore {
    /// The table's name.
    public var table: String { tableName.description }

    private let client: PostgresClient
    private let tableName: PostgresTableName
    private let logger: Logger
    /// Partitions whose row this store has made sure exists.
    private let rowsEnsured = LockedState<Set<String>>([])

    /// Creates a store in `table` on `client`, which the caller runs.
    ///
    /// - Parameters:
    ///   - client: The PostgreSQL client, which the caller runs.
    ///   - table: The table's name, `courier_rate_limits` by default.
    ///   - logger: Where the store's queries are logged (at trace level, by postgres-nio).
    /// - Throws: ``CourierError/Code/invalidRequest`` when `table` is not a plain, optionally schema-qualified,
    ///   lowercase identifier.
    public init(
        client: PostgresClient,
        table: String = "courier_rate_limits",
        logger: Logger = Logger(label: "Courier.PostgresRateLimitStore")
    ) throws(CourierError) {
        self.client = client
        self.tableName = try PostgresTableName(table)
        self.logger = logger
    }

    /// The SQL that creates the table, as ``createTable()`` runs it.
    public static func createTableSQL(table: String = "courier_rate_limits") throws(CourierError) -> String {
        let table = try PostgresTableName(table)
        return """
            CREATE TABLE IF NOT EXISTS \(table) (
                partition text PRIMARY KEY,
                window_number bigint NOT NULL DEFAULT 0,
                window_ends_at timestamptz NOT NULL DEFAULT '-infinity',
                taken integer NOT NULL DEFAULT 0,
                last_granted integer NOT NULL DEFAULT 0,
                quota jsonb
            )
            """
    }

    /// Creates the table if it does not exist.
    public func createTable() async throws {
        try await client.query(PostgresQuery(unsafeSQL: try Self.createTableSQL(table: table)), logger: logger)
    }

    /// Takes up to `count` slots of `partition`'s current window (a new one of `window` when it has ended) in
    /// one statement.
    public func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        try await ensureRow(partition)
        let count = Int32(clamping: max(count, 0))
        let limit = Int32(clamping: max(limit, 0))
        let milliseconds = PostgresInterval.milliseconds(window)
        // Every SET expression reads the row as it was before the statement: `fresh` is whether the window
        // had ended, and the slots granted are computed from what it had taken.
        let rows = try await client.query(
            """
            WITH now AS (SELECT statement_timestamp() AS at)
            UPDATE \(unescaped: table) SET
                window_number = window_number + (CASE WHEN window_ends_at <= now.at THEN 1 ELSE 0 END),
                window_ends_at = CASE WHEN window_ends_at <= now.at
                    THEN now.at + (\(milliseconds)::bigint * interval '1 millisecond') ELSE window_ends_at END,
                last_granted = LEAST(\(count)::integer,
                    GREATEST(\(limit)::integer - (CASE WHEN window_ends_at <= now.at THEN 0 ELSE taken END), 0)),
                taken = (CASE WHEN window_ends_at <= now.at THEN 0 ELSE taken END)
                    + LEAST(\(count)::integer,
                        GREATEST(\(limit)::integer - (CASE WHEN window_ends_at <= now.at THEN 0 ELSE taken END), 0))
            FROM now
            WHERE partition = \(partition)
            RETURNING last_granted, window_number, EXTRACT(EPOCH FROM (window_ends_at - now.at))::float8
            """,
            logger: logger
        )
        for try await (granted, number, endsIn) in rows.decode((Int, Int, Double).self) {
            return RateLimitReservation(
                partition: partition,
                granted: granted,
                windowEndsAt: Date().addingTimeInterval(NetworkNumber.duration(seconds: endsIn).timeInterval),
                window: number
            )
        }
        // The row was deleted since this process made sure of it: made again at the next reservation.
        rowsEnsured.withLock { _ = $0.remove(partition) }
        throw CourierError(.invalidRequest, message: "the rate-limit row of \(partition) is missing from \(table)")
    }

    /// Gives back `count` unused slots of `reservation`, if its window is still the partition's current one.
    public func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        try await client.query(
            """
            UPDATE \(unescaped: table) SET taken = GREATEST(taken - \(Int32(clamping: max(count, 0)))::integer, 0)
            WHERE partition = \(reservation.partition) AND window_number = \(reservation.window)
                AND window_ends_at > statement_timestamp()
            """,
            logger: logger
        )
    }

    /// The quota stored for `partition`, or `nil`.
    public func quota(for partition: String) async throws -> RateLimitQuota? {
        let rows = try await client.query(
            "SELECT quota::text FROM \(unescaped: table) WHERE partition = \(partition)",
            logger: logger
        )
        for try await text in rows.decode(String?.self) {
            // A row written by anything else is not trusted: what does not decode is nothing known.
            return text.flatMap { try? JSONDecoder().decode(RateLimitQuota.self, from: Data($0.utf8)) }
        }
        return nil
    }

    /// Stores `quota` for `partition`.
    public func record(_ quota: RateLimitQuota, for partition: String) async throws {
        let text = String(decoding: try JSONEncoder().encode(quota), as: UTF8.self)
        try await client.query(
            """
            INSERT INTO \(unescaped: table) (partition, quota) VALUES (\(partition), \(text)::jsonb)
            ON CONFLICT (partition) DO UPDATE SET quota = EXCLUDED.quota
            """,
            logger: logger
        )
    }

    /// Makes sure `partition` has a row, once per process and partition.
    private func ensureRow(_ partition: String) async throws {
        if rowsEnsured.withLock({ $0.contains(partition) }) { return }
        try await client.query(
            "INSERT INTO \(unescaped: table) (partition) VALUES (\(partition)) ON CONFLICT (partition) DO NOTHING",
            logger: logger
        )
        rowsEnsured.withLock { _ = $0.insert(partition) }
    }
}

/// Durations as PostgreSQL intervals, and dates as PostgreSQL can take them.
enum PostgresInterval {
    /// `date` within two hundred years of 2001: postgres-nio traps on a date whose microseconds do not fit 64 bits,
    /// and a date Courier binds may come from a server's number (a token's `expires_in`) or from elsewhere (a
    /// ``CachedResponse`` decoded from another store). An infinite date is the nearest limit; not a number, 2001.
    static func date(_ date: Date) -> Date {
        let seconds = date.timeIntervalSinceReferenceDate
        guard !seconds.isNaN else { return Date(timeIntervalSinceReferenceDate: 0) }
        let limit = 200 * 366 * 86_400.0
        return Date(timeIntervalSinceReferenceDate: min(max(seconds, -limit), limit))
    }

    /// The longest interval Courier computes, in milliseconds: 100 years, well inside what PostgreSQL's
    /// `timestamptz` arithmetic accepts, so that an extreme duration is clamped instead of failing every query.
    static let maximumMilliseconds: Int64 = 100 * 366 * 86_400 * 1000

    /// `duration` in whole milliseconds, for an interval computed on the database's clock; at least 1, at most
    /// ``maximumMilliseconds``.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return min(max(1, overflow || sumOverflow ? .max : sum), maximumMilliseconds)
    }
}
#endif
