/// The default ``HTTPCacheStore``: responses in memory, bounded by their number and their total size, the
/// least recently used evicted first.
///
/// ```swift
/// let store = InMemoryHTTPCacheStore(maximumEntries: 500, maximumBytes: 8 * 1024 * 1024)
/// let client = Client(baseURL: base, middleware: [.authenticating(token: token), .caching(store: store)])
/// ```
///
/// A response larger than `maximumBytes` is not stored. The size of an entry is its body plus its header
/// names and values (``CachedResponse/size``). Every operation takes one short lock; nothing is awaited.
public final class InMemoryHTTPCacheStore: HTTPCacheStore {
    private let entries: LockedState<LRUEntries>

    /// Creates a store.
    ///
    /// - Parameters:
    ///   - maximumEntries: The most responses kept; 1,000 by default.
    ///   - maximumBytes: The most bytes kept (see ``CachedResponse/size``); 32 MiB by default.
    public init(maximumEntries: Int = 1_000, maximumBytes: Int = 32 * 1024 * 1024) {
        entries = LockedState(LRUEntries(maximumCount: maximumEntries, maximumSize: maximumBytes))
    }

    /// How many responses are stored now.
    public var count: Int { entries.withLock { $0.count } }

    /// The total size of the stored responses now.
    public var bytes: Int { entries.withLock { $0.size } }

    /// Every stored response (for tests).
    var allResponses: [CachedResponse] { entries.withLock { $0.all } }

    /// The responses stored for `key`, each marked as just used.
    public func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] {
        entries.withLock { $0.responses(for: key) }
    }

    /// Stores `response`, then evicts the least recently used entries until both limits hold.
    public func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {
        entries.withLock { _ = $0.store(response, for: key) }
    }

    /// Removes every response stored for `resource`.
    public func removeResponses(forResource resource: String) async throws {
        entries.withLock { $0.removeAll(forResource: resource) }
    }
}
