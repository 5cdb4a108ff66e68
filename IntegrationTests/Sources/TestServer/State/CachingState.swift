/// What the caching routes remember per key: the version of the resource, and how many full (`200`) and
/// `304` answers they gave.
actor CachingState {
    private var stats: [String: CacheStats] = [:]
    private var versions: [String: Int] = [:]

    func version(_ key: String) -> Int {
        versions[key, default: 1]
    }

    func change(_ key: String) {
        versions[key, default: 1] += 1
    }

    func countFull(_ key: String) {
        stats[key, default: CacheStats()].full += 1
    }

    func countNotModified(_ key: String) {
        stats[key, default: CacheStats()].notModified += 1
    }

    func stats(_ key: String) -> CacheStats {
        stats[key, default: CacheStats()]
    }
}

/// The counts of `/cache/stats/:key`.
public struct CacheStats: Codable, Sendable, Equatable {
    /// Full answers (`200` with a body).
    public var full = 0
    /// `304 Not Modified` answers.
    public var notModified = 0

    /// Creates counts.
    public init(full: Int = 0, notModified: Int = 0) {
        self.full = full
        self.notModified = notModified
    }
}
