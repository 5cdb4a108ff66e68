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
/// one `DELETE` of every row of the resource.
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
/// invisible to lookups and deleted: at most ``cleanupLimit`` of them by the first ``store(_:for:)`` of each
/// ``cleanupInterval`` on each replica, or by ``removeExpired(limit:)`` from a job of your own. A response whose
/// ``CachedResponse/size`` is above ``maximumResponseBytes`` is not stored. The table therefore holds what the
/// API made cacheable within a retention period, and no more.
///
/// **When the database is slow or down.** Every operation gives up after ``timeout`` (and at once when the
/// caller is cancelled, whatever the connection does), and throws: the cache then goes to the server as if
/// nothing were stored, or leaves the response unstored, and reports ``CacheEvent/Kind/storeFailed``. A call
/// through the cache therefore waits for the database at most ``timeout`` per operation (a miss makes up to
/// three: a lookup, a second lookup in the request all concurrent callers share, a store), and never past the
/// caller's own deadline. Nothing needs resetting when the database returns.
///
/// Replicas that miss at the same moment each fetch from the server: the cache sends one request per process
/// for concurrent misses, not one per fleet.
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

    private let client: PostgresClient
    private let tableName: PostgresTableName
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
    ///   - timeout: The longest one operation may take; one second by default. Keep it well below what a request
    ///     to the server costs: a lookup slower than the server is no use.
    ///   - retention: How long a row stays after its response went stale, for revalidation; one hour by default.
    ///   - maximumResponseBytes: The largest ``CachedResponse/size`` stored; 1 MiB by default.
    ///   - cleanupInterval: How often each replica deletes expired rows; every minute by default.
    ///   - cleanupLimit: The most rows one cleanup deletes; 500 by default.
    ///   - clock: Measures ``timeout`` and ``cleanupInterval``; tests pass a manual clock.
    /// - Throws: ``CourierError/Code/invalidRequest`` when `table` is not a plain, optionally schema-qualified,
    ///   lowercase identifier.
    public init(
        client: PostgresClient,
        table: String = "courier_http_cache",
        timeout: Duration = .seconds(1),
        retention: Duration = .seconds(3600),
        maximumResponseBytes: Int = 1024 * 1024,
        cleanupInterval: Duration = .seconds(60),
        cleanupLimit: Int = 500,
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "Courier.PostgresHTTPCacheStore")
    ) throws(CourierError) {
        precondition(timeout > .zero, "a store timeout must be longer than zero")
        self.client = client
        self.tableName = try PostgresTableName(table)
        self.timeout = timeout
        self.retention = max(.zero, retention)
        self.maximumResponseBytes = maximumResponseBytes
        self.cleanupInterval = cleanupInterval
        self.cleanupLimit = max(1, cleanupLimit)
        self.logger = logger
        self.sleep = { try await clock.sleep(for: $0) }
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
    }

    /// The SQL that creates the table and its index, as ``createTable()`` runs it.
    public static func createTableSQL(table: String = "courier_http_cache") throws(CourierError) -> String {
        try createTableStatements(table: PostgresTableName(table)).map { $0 + ";" }.joined(separator: "\n")
    }

    private static func createTableStatements(table: PostgresTableName) -> [String] {
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
        ]
    }

    /// Creates the table and its index if they do not exist.
    public func createTable() async throws {
        for statement in Self.createTableStatements(table: tableName) {
            try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    // MARK: HTTPCacheStore

    /// The responses stored for `key` whose rows have not expired: one `SELECT` by primary key.
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
                responses.append(try StoredForm.decode(fields: fields, body: body))
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
        let keepUntil = Self.keepUntil(response, retention: retention)
        try await bounded("store a response") { [client, table, logger] in
            _ = try await client.query(
                """
                INSERT INTO \(unescaped: table) (resource_hash, partition, variant_hash, fields, body, keep_until)
                VALUES (\(resource), \(partition), \(variant), \(fields), \(body), \(keepUntil))
                ON CONFLICT (resource_hash, partition, variant_hash) DO UPDATE
                SET fields = EXCLUDED.fields, body = EXCLUDED.body, keep_until = EXCLUDED.keep_until
                """,
                logger: logger
            )
        }
        guard isCleanupDue() else { return }
        // The response is stored: a failed cleanup is logged, not thrown (the next interval tries again).
        do {
            let deleted = try await removeExpired(limit: cleanupLimit)
            if deleted > 0 { logger.debug("deleted \(deleted) expired rows from \(table)") }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.warning("could not delete expired rows from \(table): \(error)")
        }
    }

    /// Removes every row of `resource`, whatever its partition and variant: one `DELETE`.
    public func removeResponses(forResource resource: String) async throws {
        let resource = Self.hash(resource)
        try await bounded("remove the responses of a resource") { [client, table, logger] in
            _ = try await client.query(
                "DELETE FROM \(unescaped: table) WHERE resource_hash = \(resource)",
                logger: logger
            )
        }
    }

    // MARK: Maintenance

    /// Deletes up to `limit` rows whose time is up (the oldest first), and returns how many it deleted. Rows locked
    /// by another replica's cleanup are skipped, so replicas that clean up at once do not wait for each other.
    @discardableResult
    public func removeExpired(limit: Int = 500) async throws -> Int {
        let limit = max(1, limit)
        return try await bounded("remove expired responses") { [client, table, logger] in
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
            return deleted
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
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await BoundedStoreCall.run(
            limit: timeout,
            message: "the PostgreSQL cache store did not \(operation) within \(timeout)",
            sleep: sleep,
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
