#if Postgres
public import PostgresNIO
import Foundation

/// An ``HTTPCacheStore`` in PostgreSQL (trait `Postgres`): the replicas of a fleet share one cache.
///
/// ```swift
/// let postgres = PostgresClient(configuration: configuration)   // run it: `await postgres.run()` in your service group
/// let store = try PostgresHTTPCacheStore(client: postgres)
/// try await store.createTable()
/// let cache = HTTPCache(store: store, partitionSecret: secret)  // the same secret on every replica
/// ```
///
/// One row per ``HTTPCacheKey`` and ``CachedResponse/variant``, in a table Courier creates
/// (``createTableSQL(table:)``). Each operation is one statement: a lookup is one `SELECT` by primary key, a store
/// one `INSERT … ON CONFLICT DO UPDATE` (two replicas storing the same response at once leave one row), a removal
/// one `DELETE` of every row of the resource that also notes the time (below).
///
/// **Invalidations reach every replica.** A removal (an unsafe request's invalidation through any replica's
/// cache, or a stored response the cache may no longer keep) also notes the time in a row of its own for
/// ``invalidationMemory``, and a store writes nothing when the response's request began before a noted
/// invalidation of its resource, or up to ``invalidationSkew`` after it (when it began is taken as the earlier of
/// the replica's clock and the database's clock less the time the request took, so a replica whose clock is
/// ahead does not escape the note): a response that was on its way at one replica while another changed the resource may
/// describe it before the change, and is not served to the fleet for its lifetime. What this leaves: a store
/// whose statement runs in the database at the same moment as the invalidation's (within a millisecond, at the
/// end of a request that took a round trip to the server) may still leave the response stored.
///
/// **What the table holds.** No credential: the key's resource is kept only as its SHA-256 (so an API key in the
/// query string is not in clear; the URL's user info is never in a key), the partition is the opaque identity
/// ``HTTPCache`` computes (see ``HTTPCache/PartitionSecret``), and a credential header named by `Vary` is recorded
/// in the variant as present, never with its value. A response whose own header fields include a credential
/// header (``CredentialHeaders/contains(_:)``: `X-Auth-Token`, a name containing `session`, …) is refused with
/// ``CourierError/Code/invalidRequest`` rather than written (the cache reports
/// ``CacheEvent/Kind/storeFailed`` and the caller gets the response). Bodies and the other header fields are
/// stored as the server sent them: they are what the cache serves, so protect the table like the data the API
/// returns.
///
/// **How long rows stay.** A row is kept while its response is fresh, then for ``retention`` more (a stale
/// response with a validator is revalidated with a `304` rather than fetched again), or for its
/// `stale-if-error` period when that is longer; never more than a year after it was received. Rows past that are
/// invisible to lookups and deleted: at most ``cleanupLimit`` of them by the first ``store(_:for:)`` or
/// ``removeResponses(forResource:)`` of each ``cleanupInterval`` on each replica, or by ``removeExpired(limit:)``
/// from a job of your own. A response whose ``CachedResponse/size`` is above ``maximumResponseBytes`` is not
/// stored. The table therefore holds what the API made cacheable within a retention period, and a note for each
/// resource invalidated in the last ``invalidationMemory``, and no more.
///
/// **When the database is slow or down.** Every operation gives up after ``timeout`` (and at once when the
/// caller is cancelled, whatever the connection does), and throws: the cache then goes to the server as if
/// nothing were stored, or leaves the response unstored, and reports ``CacheEvent/Kind/storeFailed``. A call
/// through the cache therefore waits for the database at most ``timeout`` per operation (with the database
/// down, a miss makes four: a lookup, a second lookup in the request all concurrent callers share, the fill's
/// start, the store), and never past the caller's own deadline. Nothing needs resetting when the database
/// returns. One thing a timeout does not undo: a fill's start given up on while its statement waited in the
/// server (behind a lock, on a stalled database) may still take the fill there afterwards, since postgres-nio
/// does not cancel a statement in flight; that fill is then held for nobody, and the replicas that miss the
/// resource wait for it at most its lease (``fillLease``) before one of them takes it over.
///
/// **One fetch for the fleet.** When nothing fresh answers, the cache sends one request per process for
/// concurrent misses; across processes this store lets one replica fetch (a lease row in the table
/// `<table>_fills`, taken with one `INSERT … ON CONFLICT DO UPDATE` that succeeds only when nobody holds it or the
/// holder's ``fillLease`` has ended) while the others `LISTEN` on a channel named after the table, are woken by
/// the `NOTIFY` the holder sends once it has stored the response, and read it. A replica waits at most what the
/// lease has left (and no longer than its own ``fillLease``: give every replica the same), and then fetches
/// itself: a replica that dies while fetching holds the fleet back for no longer than its lease. One whose fetch
/// is cancelled (every caller left) or fails ends its fill at once, and the waiters fetch. A miss costs two more
/// statements (the lease taken and released) and the cache's lookup under the lease, a wait one connection for its
/// duration (a cancelled waiter gives it back at once).
public final class PostgresHTTPCacheStore: HTTPCacheStore {
    /// The table's name.
    public var table: String { tableName.description }
    /// The longest one operation may take before it throws ``CourierError/Code/timedOut``.
    public let timeout: Duration
    /// How long a row is kept after its response went stale.
    public let retention: Duration
    /// The largest ``CachedResponse/size`` stored.
    public let maximumResponseBytes: Int
    /// How often a replica deletes expired rows, during a ``store(_:for:)``.
    public let cleanupInterval: Duration
    /// The most expired rows one cleanup deletes.
    public let cleanupLimit: Int
    /// How long one replica's fetch of a response keeps the others waiting for it; `nil` when replicas do not
    /// coordinate their fetches.
    public let fillLease: Duration?

    private let client: PostgresClient
    private let tableName: PostgresTableName
    /// The table of fills in progress: the cache table's name with `_fills`.
    private let fillsName: PostgresTableName
    private let logger: Logger
    private let sleep: @Sendable (Duration) async throws -> Void
    /// The time since this store was made, on its clock.
    private let elapsed: @Sendable () -> Duration
    /// When the last cleanup started (``elapsed``), or `nil` before the first.
    private let lastCleanup = LockedState<Duration?>(nil)

    /// The longest a row is kept after its response was received, whatever its headers say: one year.
    static let longestKept: TimeInterval = 366 * 24 * 3600

    /// Creates a store in `table` on `client`, which the caller runs.
    ///
    /// - Parameters:
    ///   - client: The PostgreSQL client, which the caller runs.
    ///   - table: The table's name, `courier_http_cache` by default.
    ///   - timeout: The longest one operation may take; one second by default. Keep it well below what a request
    ///     to the server costs: a lookup slower than the server is no use.
    ///   - retention: How long a row stays after its response went stale, for revalidation; one hour by default.
    ///   - maximumResponseBytes: The largest ``CachedResponse/size`` stored; 1 MiB by default.
    ///   - cleanupInterval: How often each replica deletes expired rows; every minute by default.
    ///   - cleanupLimit: The most rows one cleanup deletes; 500 by default.
    ///   - fillLease: How long one replica's fetch of a response that nothing fresh answered keeps the others
    ///     waiting for what it stores; 10 seconds by default. Make it longer than the server usually takes to
    ///     answer: a fetch that takes longer lets the next replica fetch too. `nil` coordinates nothing: every
    ///     replica that misses fetches.
    ///   - clock: Measures ``timeout`` and ``cleanupInterval``; tests pass a manual clock.
    ///   - logger: Where the store's queries are logged (at trace level, by postgres-nio).
    /// - Throws: ``CourierError/Code/invalidRequest`` when `table` is not a plain, optionally schema-qualified,
    ///   lowercase identifier of at most 57 characters (the table of fills adds `_fills` to it, within
    ///   PostgreSQL's 63).
    public init(
        client: PostgresClient,
        table: String = "courier_http_cache",
        timeout: Duration = .seconds(1),
        retention: Duration = .seconds(3600),
        maximumResponseBytes: Int = 1024 * 1024,
        cleanupInterval: Duration = .seconds(60),
        cleanupLimit: Int = 500,
        fillLease: Duration? = .seconds(10),
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "Courier.PostgresHTTPCacheStore")
    ) throws(CourierError) {
        precondition(timeout > .zero, "a store timeout must be longer than zero")
        self.client = client
        self.tableName = try PostgresTableName(table)
        self.fillsName = try PostgresTableName(table + "_fills")
        self.timeout = timeout
        self.retention = max(.zero, retention)
        self.maximumResponseBytes = maximumResponseBytes
        self.cleanupInterval = cleanupInterval
        self.cleanupLimit = max(1, cleanupLimit)
        self.fillLease = fillLease.map { max(.milliseconds(1), $0) }
        self.logger = logger
        self.sleep = { try await clock.sleep(for: $0) }
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
    }

    /// The SQL that creates the table and its index, as ``createTable()`` runs it.
    public static func createTableSQL(table: String = "courier_http_cache") throws(CourierError) -> String {
        try createTableStatements(table: PostgresTableName(table), fills: PostgresTableName(table + "_fills"))
            .map { $0 + ";" }.joined(separator: "\n")
    }

    private static func createTableStatements(table: PostgresTableName, fills: PostgresTableName) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS \(table) (
                resource_hash bytea NOT NULL,
                partition text NOT NULL,
                variant_hash bytea NOT NULL,
                fields bytea NOT NULL,
                body bytea NOT NULL,
                keep_until timestamptz NOT NULL,
                PRIMARY KEY (resource_hash, partition, variant_hash)
            )
            """,
            "CREATE INDEX IF NOT EXISTS \(table.unqualified)_keep_until ON \(table) (keep_until)",
            """
            CREATE TABLE IF NOT EXISTS \(fills) (
                fill_key bytea PRIMARY KEY,
                holder text NOT NULL,
                lease_expires_at timestamptz NOT NULL
            )
            """,
        ]
    }

    /// Creates the table, its index and the table of fills if they do not exist.
    public func createTable() async throws {
        for statement in Self.createTableStatements(table: tableName, fills: fillsName) {
            try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    // MARK: HTTPCacheStore

    /// The responses stored for `key` whose rows have not expired: one `SELECT` by primary key. A row whose fields
    /// do not decode is skipped (and logged), so that one bad row does not hide the key's others.
    public func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] {
        let resource = Self.hash(key.resource)
        let partition = key.partition
        return try await bounded("look up a response") { [client, table, logger] in
            let rows = try await client.query(
                """
                SELECT fields, body FROM \(unescaped: table)
                WHERE resource_hash = \(resource) AND partition = \(partition) AND keep_until > clock_timestamp()
                """,
                logger: logger
            )
            var responses: [CachedResponse] = []
            for try await (fields, body) in rows.decode((Data, Data).self) {
                // A row this version cannot read (written by another version, or by hand) is skipped, not thrown:
                // thrown, it would fail every lookup of the key until the row expires, since a store replaces
                // only the row of its own variant.
                do {
                    responses.append(try StoredForm.decode(fields: fields, body: body))
                } catch {
                    logger.warning("skipped a row of \(table) that does not decode: \(error)")
                }
            }
            return responses
        }
    }

    /// Stores `response` for `key`, replacing the row of the same key and variant; then, at most once per
    /// ``cleanupInterval``, deletes up to ``cleanupLimit`` expired rows (a failure of that cleanup is logged, not
    /// thrown).
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` when one of the response's header fields is a credential
    ///   header; nothing is written then.
    public func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {
        if let name = response.headers.keys.first(where: CredentialHeaders.contains) {
            throw CourierError(
                .invalidRequest,
                message: "the response has a credential header field (\(name)); it is not written to the shared cache"
            )
        }
        guard response.size <= maximumResponseBytes else {
            logger.debug("not stored: \(response.size) bytes is above maximumResponseBytes")
            return
        }
        let resource = Self.hash(key.resource)
        let partition = key.partition
        let variant = Self.hash(response.variant)
        let fields = try StoredForm.encodeFields(of: response)
        let body = response.body
        // A date that is not finite comes from an entry decoded from elsewhere, not from a clock: kept until 2001,
        // that is not kept (an infinite one would otherwise be kept two hundred years, and never removed).
        let end = Self.keepUntil(response, retention: retention)
        let keepUntil = PostgresInterval.date(
            end.timeIntervalSinceReferenceDate.isFinite ? end : .init(timeIntervalSinceReferenceDate: 0)
        )
        // When the request began, as early as it may have: by this machine's clock, and by the database's (now,
        // less the time the request took: the response's two dates are on one clock, whatever time it shows),
        // the earlier of the two, less `invalidationSkew`. A note later than that is an invalidation the response
        // may predate.
        let requestDate = PostgresInterval.date(response.requestDate)
        let roundTrip = Self.milliseconds(seconds: response.responseDate.timeIntervalSince(response.requestDate))
        let memory = Self.milliseconds(Self.invalidationMemory)
        let skew = Self.milliseconds(Self.invalidationSkew)
        let marker = Self.invalidationPartition
        let stored = try await bounded("store a response") { [client, table, logger] in
            let rows = try await client.query(
                """
                INSERT INTO \(unescaped: table) (resource_hash, partition, variant_hash, fields, body, keep_until)
                SELECT \(resource), \(partition), \(variant), \(fields), \(body), \(keepUntil)
                WHERE NOT EXISTS (
                    SELECT 1 FROM \(unescaped: table)
                    WHERE resource_hash = \(resource) AND partition = \(marker)
                    AND keep_until - (\(memory)::bigint * interval '1 millisecond') > LEAST(
                        \(requestDate), clock_timestamp() - (\(roundTrip)::bigint * interval '1 millisecond')
                    ) - (\(skew)::bigint * interval '1 millisecond')
                )
                ON CONFLICT (resource_hash, partition, variant_hash) DO UPDATE
                SET fields = EXCLUDED.fields, body = EXCLUDED.body, keep_until = EXCLUDED.keep_until
                RETURNING 1
                """,
                logger: logger
            )
            var stored = false
            for try await _ in rows.decode(Int.self) { stored = true }
            return stored
        }
        if !stored {
            logger.debug("not stored: another replica invalidated the resource after the request began")
        }
        try await cleanUpIfDue()
    }

    /// At most once per ``cleanupInterval``, deletes up to ``cleanupLimit`` expired rows; a failure is logged, not
    /// thrown (the next interval tries again).
    private func cleanUpIfDue() async throws {
        guard isCleanupDue() else { return }
        do {
            let deleted = try await removeExpired(limit: cleanupLimit)
            if deleted > 0 { logger.debug("deleted \(deleted) expired rows from \(table)") }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.warning("could not delete expired rows from \(table): \(error)")
        }
    }

    /// Removes every row of `resource`, whatever its partition and variant, and notes the invalidation for
    /// ``invalidationMemory`` (a row of its own that lookups never see), so that no replica stores a response
    /// whose request began before it: one statement. Then, at most once per ``cleanupInterval``, deletes expired
    /// rows, notes included, as a store does.
    public func removeResponses(forResource resource: String) async throws {
        let resource = Self.hash(resource)
        let marker = Self.invalidationPartition
        let memory = Self.milliseconds(Self.invalidationMemory)
        try await bounded("remove the responses of a resource") { [client, table, logger] in
            _ = try await client.query(
                """
                WITH removed AS (
                    DELETE FROM \(unescaped: table) WHERE resource_hash = \(resource) AND partition <> \(marker)
                )
                INSERT INTO \(unescaped: table) AS noted
                    (resource_hash, partition, variant_hash, fields, body, keep_until)
                VALUES (
                    \(resource), \(marker), '\\x'::bytea, '\\x'::bytea, '\\x'::bytea,
                    clock_timestamp() + (\(memory)::bigint * interval '1 millisecond')
                )
                ON CONFLICT (resource_hash, partition, variant_hash) DO UPDATE
                SET keep_until = GREATEST(noted.keep_until, EXCLUDED.keep_until)
                """,
                logger: logger
            )
        }
        try await cleanUpIfDue()
    }

    /// How long an invalidation is remembered: a response whose request began before it and that arrives within
    /// this time is not stored by any replica. Ten minutes, longer than a request's deadline should be; each
    /// resource a write invalidated keeps one row for that long.
    public static let invalidationMemory: Duration = .seconds(600)

    /// The margin for clocks and for the time a store's statement takes to reach the database: a response whose
    /// request began up to this long after an invalidation is not stored either. One second.
    public static let invalidationSkew: Duration = .seconds(1)

    /// The partition of the row that notes a resource's invalidation: no ``HTTPCacheKey`` has it (a partition
    /// starts with the request's method, which has no space).
    static let invalidationPartition = " invalidated"

    // MARK: Maintenance

    /// Deletes up to `limit` rows whose time is up (the oldest first), and returns how many it deleted. Rows locked
    /// by another replica's cleanup are skipped, so replicas that clean up at once do not wait for each other.
    @discardableResult
    public func removeExpired(limit: Int = 500) async throws -> Int {
        let limit = max(1, limit)
        return try await bounded("remove expired responses") { [client, table, fills, logger] in
            let rows = try await client.query(
                """
                DELETE FROM \(unescaped: table) WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM \(unescaped: table) WHERE keep_until <= clock_timestamp()
                    ORDER BY keep_until LIMIT \(limit) FOR UPDATE SKIP LOCKED
                ))
                RETURNING 1
                """,
                logger: logger
            )
            var deleted = 0
            for try await _ in rows.decode(Int.self) { deleted += 1 }
            // And the fills of replicas that died while fetching.
            _ = try await client.query(
                "DELETE FROM \(unescaped: fills) WHERE lease_expires_at <= clock_timestamp()",
                logger: logger
            )
            return deleted
        }
    }

    // MARK: Fills

    /// Whether replicas coordinate their fetches: when ``fillLease`` is not `nil`.
    public var coordinatesFills: Bool { fillLease != nil }

    /// Takes the fill of `key` for `holder` when nobody holds it or the holder's lease has ended (one
    /// `INSERT … ON CONFLICT DO UPDATE … WHERE` the lease has ended), or returns what the other holder's lease has
    /// left, on the database's clock, and at most ``fillLease``. Returns `nil` at once when ``fillLease`` is `nil`.
    public func beginFill(for key: HTTPCacheKey, holder: String) async throws -> Duration? {
        guard let fillLease else { return nil }
        let fillKey = Self.fillKey(key)
        let milliseconds = Self.milliseconds(fillLease)
        return try await bounded("begin a fill") { [client, fills, logger] in
            let taken = try await client.query(
                """
                INSERT INTO \(unescaped: fills) AS fill (fill_key, holder, lease_expires_at)
                VALUES (\(fillKey), \(holder), clock_timestamp() + (\(milliseconds)::bigint * interval '1 millisecond'))
                ON CONFLICT (fill_key) DO UPDATE
                SET holder = EXCLUDED.holder, lease_expires_at = EXCLUDED.lease_expires_at
                WHERE fill.lease_expires_at <= clock_timestamp()
                RETURNING holder
                """,
                logger: logger
            )
            for try await _ in taken.decode(String.self) { return nil }
            let left = try await client.query(
                """
                SELECT EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))::float8
                FROM \(unescaped: fills) WHERE fill_key = \(fillKey)
                """,
                logger: logger
            )
            for try await seconds in left.decode(Double.self) {
                // No longer than this replica's own lease: a holder given a far longer one (or a row written by
                // hand) holds this replica back no more than its own fetch would hold the others.
                return min(fillLease, NetworkNumber.duration(seconds: max(0, seconds)))
            }
            return .zero  // ended just now: look again
        }
    }

    /// Releases `holder`'s fill of `key`, if it still holds it, and then notifies the waiters (at the commit).
    ///
    /// The notification names the table of fills by its object identifier and the key by its hash: the channel is
    /// named after the table without its schema, so a same-named table in another schema shares it, and its
    /// fills must not wake this table's waiters (each woken waiter would fetch on its own).
    public func endFill(for key: HTTPCacheKey, holder: String) async throws {
        guard fillLease != nil else { return }
        let fillKey = Self.fillKey(key)
        let channel = tableName.unqualified
        let payload = " " + Self.hex(fillKey)
        try await bounded("end a fill") { [client, fills, logger] in
            _ = try await client.query(
                """
                WITH ended AS (
                    DELETE FROM \(unescaped: fills) WHERE fill_key = \(fillKey) AND holder = \(holder) RETURNING 1
                )
                SELECT pg_notify(\(channel), to_regclass(\(fills))::oid::text || \(payload)) FROM ended
                """,
                logger: logger
            )
        }
    }

    /// `LISTEN`s on a channel named after the table, checks once listening that the fill of `key` is still held
    /// (one that ended just before is not waited for), then returns at its end's notification or once `timeout`
    /// has passed since the call: the time it took to get a connection and listen is part of it, not added to it
    /// (on a busy pool that would outlast the wait's bound, `timeout` plus ``timeout``, and throw).
    public func waitForFill(of key: HTTPCacheKey, timeout: Duration) async throws {
        guard fillLease != nil, timeout > .zero else { return }
        let fillKey = Self.fillKey(key)
        let channel = tableName.unqualified
        let hash = Self.hex(fillKey)
        let sleep = self.sleep
        let elapsed = self.elapsed
        // At most a year: an instant that far is never reached, and one past the clock's range would trap.
        let timeout = min(timeout, .seconds(365 * 86_400))
        let end = elapsed() + timeout
        // A cancelled waiter's wait is cancelled with it: it would hold a connection of the pool until its limit.
        try await bounded("wait for a fill", limit: timeout + self.timeout, cancelsWithCaller: true) {
            [client, fills, logger] in
            try await client.withConnection { connection in
                try await connection.listen(on: channel) { notifications in
                    // Whether the fill is still held, and the table's object identifier its end's notification
                    // names (``endFill(for:holder:)``).
                    let held = try await connection.query(
                        """
                        SELECT to_regclass(\(fills))::oid::bigint FROM \(unescaped: fills)
                        WHERE fill_key = \(fillKey) AND lease_expires_at > clock_timestamp()
                        """,
                        logger: logger
                    )
                    var payload: String?
                    for try await oid in held.decode(Int.self) { payload = "\(oid) \(hash)" }
                    guard let payload else { return }
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await notification in notifications where notification.payload == payload {
                                return
                            }
                        }
                        group.addTask { try await sleep(max(.zero, end - elapsed())) }
                        defer { group.cancelAll() }
                        try await group.next()
                    }
                }
            }
        }
    }

    // MARK: Helpers

    /// When the row of `response` may be deleted: its freshness ends, plus `retention` or its `stale-if-error`
    /// period, whichever is longer; at most ``longestKept`` after it was received.
    static func keepUntil(_ response: CachedResponse, retention: Duration) -> Date {
        let facts = response.facts
        let freshFor = max(0, facts.freshnessLifetime - facts.initialAge)
        let staleFor = max(retention.timeInterval, Double(facts.directives.staleIfError ?? 0))
        return response.responseDate.addingTimeInterval(min(longestKept, freshFor + staleFor))
    }

    /// The SHA-256 of `text`'s UTF-8 bytes: what the table keeps of a resource and of a variant.
    static func hash(_ text: String) -> Data {
        Data(SHA256.hash(text.utf8))
    }

    /// What the table of fills keeps of a key: the SHA-256 of its resource's hash and its partition.
    static func fillKey(_ key: HTTPCacheKey) -> Data {
        Data(SHA256.hash(SHA256.hash(key.resource.utf8) + Array(key.partition.utf8)))
    }

    /// The fills table's name, for SQL text.
    private var fills: String { fillsName.description }

    /// `bytes` as lowercase hexadecimal digits: a fill's notification payload.
    static func hex(_ bytes: Data) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    /// `seconds` in whole milliseconds, from 0 to a year (not a number: 0).
    static func milliseconds(seconds: TimeInterval) -> Int64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int64(min(seconds, 366 * 86_400) * 1000)
    }

    /// `duration` in whole milliseconds, for an interval computed on the database's clock; at least 1.
    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return max(1, overflow || sumOverflow ? .max : sum)
    }

    /// Whether this store's next cleanup is due, marking it started when it is.
    private func isCleanupDue() -> Bool {
        let now = elapsed()
        return lastCleanup.withLock { last in
            if let previous = last, now - previous < cleanupInterval { return false }
            last = now
            return true
        }
    }

    private func bounded<Value: Sendable>(
        _ operation: String,
        limit: Duration? = nil,
        cancelsWithCaller: Bool = false,
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let limit = limit ?? timeout
        return try await StoreCall.bounded(
            "the PostgreSQL cache store did not \(operation)",
            limit: limit,
            sleep: sleep,
            cancelsWithCaller: cancelsWithCaller,
            body
        )
    }
}

extension PostgresHTTPCacheStore {
    /// How a ``CachedResponse`` is written: its body as it is, and its other fields as JSON in which each date is
    /// the bit pattern of its `timeIntervalSinceReferenceDate`, so that what is read back is equal to what was
    /// stored, to the last bit.
    enum StoredForm {
        private struct Fields: Codable {
            var statusCode: Int
            var headers: [String: String]
            var requestDate: UInt64
            var responseDate: UInt64
            var variant: String
        }

        static func encodeFields(of response: CachedResponse) throws -> Data {
            try JSONEncoder().encode(
                Fields(
                    statusCode: response.statusCode,
                    headers: response.headers,
                    requestDate: response.requestDate.timeIntervalSinceReferenceDate.bitPattern,
                    responseDate: response.responseDate.timeIntervalSinceReferenceDate.bitPattern,
                    variant: response.variant
                )
            )
        }

        static func decode(fields: Data, body: Data) throws -> CachedResponse {
            let fields = try JSONDecoder().decode(Fields.self, from: fields)
            return CachedResponse(
                statusCode: fields.statusCode,
                headers: fields.headers,
                body: body,
                requestDate: Date(timeIntervalSinceReferenceDate: Double(bitPattern: fields.requestDate)),
                responseDate: Date(timeIntervalSinceReferenceDate: Double(bitPattern: fields.responseDate)),
                variant: fields.variant
            )
        }
    }
}
#endif
