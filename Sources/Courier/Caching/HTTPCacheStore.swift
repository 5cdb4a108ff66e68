/// Where an ``HTTPCache`` keeps responses.
///
/// ``InMemoryHTTPCacheStore`` is the default. Conform your own type to share one cache between the replicas
/// of a service, in a database or key-value store they already run: ``CachedResponse`` is `Codable`, and a
/// store only needs to keep, per ``HTTPCacheKey``, one response per ``CachedResponse/variant``, and to remove
/// every key of a resource at once. The cache makes its decisions itself; a store needs no HTTP knowledge. A
/// shared store may also coordinate the processes' fetches (``beginFill(for:holder:)``), so that a response
/// they all miss at once is fetched by one of them; by default it does not.
///
/// A store that throws makes the cache pass the request to the server as if nothing were stored (a failed
/// lookup), or leave the response unstored (a failed write); the error is reported as a
/// ``CacheEvent/Kind/storeFailed`` event, never to the caller. `CancellationError` is passed on.
public protocol HTTPCacheStore: Sendable {
    /// The responses stored for `key`, one per variant, in any order.
    func responses(for key: HTTPCacheKey) async throws -> [CachedResponse]

    /// Stores `response` for `key`, replacing the one stored for the same key and
    /// ``CachedResponse/variant``, if any.
    func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws

    /// Removes every response stored for `resource`, whatever its partition (``HTTPCacheKey/resource``).
    func removeResponses(forResource resource: String) async throws

    /// Asks to be the one that fetches `key` from the server, now that nothing fresh is stored for it; `holder`
    /// names this fetch. Returns `nil` when the fetch is `holder`'s: the cache fetches, stores what it may, and
    /// calls ``endFill(for:holder:)``. Returns how long another holder's fetch may still take when there is one:
    /// the cache waits for it with ``waitForFill(of:timeout:)`` and looks `key` up again.
    ///
    /// Concurrent misses within one ``HTTPCache`` are coalesced already; this is for the processes that share
    /// the store. The default coordinates nothing: it returns `nil`, and every process that misses fetches.
    /// A store that coordinates bounds each fetch with a lease, so that a process that dies while fetching
    /// holds the others back for no longer than that.
    func beginFill(for key: HTTPCacheKey, holder: String) async throws -> Duration?

    /// Whether this store coordinates fills at all; `false` by default. When it is `false`, the cache asks
    /// nothing about fills and a miss costs what it cost before fills existed.
    var coordinatesFills: Bool { get }

    /// Ends `holder`'s fetch of `key` (its response stored or not) and wakes those waiting for it. The default
    /// does nothing.
    func endFill(for key: HTTPCacheKey, holder: String) async throws

    /// Returns when the fetch of `key` that another holder announced has ended, or after `timeout`. The default
    /// returns at once.
    func waitForFill(of key: HTTPCacheKey, timeout: Duration) async throws
}

extension HTTPCacheStore {
    /// `false`: the store coordinates nothing.
    public var coordinatesFills: Bool { false }

    /// Coordinates nothing: every process that misses fetches.
    public func beginFill(for key: HTTPCacheKey, holder: String) async throws -> Duration? { nil }

    /// Does nothing.
    public func endFill(for key: HTTPCacheKey, holder: String) async throws {}

    /// Returns at once.
    public func waitForFill(of key: HTTPCacheKey, timeout: Duration) async throws {}
}

/// What a stored response is filed under.
public struct HTTPCacheKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The absolute URL of the request, without a fragment. An unsafe request invalidates every key of
    /// its resource.
    public var resource: String
    /// The method (`GET` or `HEAD`) and, for a request that carried a credential, an opaque identity of that
    /// credential: a 128-bit keyed hash, with a key drawn at random for each ``HTTPCache``. The credential
    /// cannot be recovered from it, and two credentials never share a partition. Because the hash key is
    /// per cache, a response to a request with a credential is never found by another process, even
    /// through a shared store; one without a credential is. Replicas that share a store and should share such
    /// responses too give their caches the same ``HTTPCache/PartitionSecret``: the hash is then keyed with it.
    public var partition: String

    /// Creates a key.
    public init(resource: String, partition: String) {
        self.resource = resource
        self.partition = partition
    }

    /// The partition and the resource, with secrets in the URL redacted.
    public var description: String {
        "\(partition) \(Redaction.redactedURLString(resource))"
    }
}
