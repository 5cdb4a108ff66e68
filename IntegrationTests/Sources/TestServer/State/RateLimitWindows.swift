/// The rate-limit windows of one test server, per key: a window the test moves on through a control route,
/// so that the server's windows and a client's manual clock move together and nothing sleeps.
actor RateLimitWindows {
    private struct Partition {
        var window = 0
        var counts: [Int] = [0]
        var refused = 0
        var isOpen = false
    }

    private var partitions: [String: Partition] = [:]

    /// Counts a request to `key` against `limit`: returns what is left after it, or `nil` when the window's
    /// quota is used up (and counts a refusal).
    func take(_ key: String, limit: Int) -> Int? {
        var partition = partitions[key] ?? Partition()
        defer { partitions[key] = partition }
        guard partition.counts[partition.window] < limit else {
            partition.refused += 1
            return nil
        }
        partition.counts[partition.window] += 1
        return limit - partition.counts[partition.window]
    }

    /// Whether `key` has been opened (`/throttled`); counts a refusal when it has not.
    func admitThrottled(_ key: String) -> Bool {
        var partition = partitions[key] ?? Partition()
        defer { partitions[key] = partition }
        guard partition.isOpen else {
            partition.refused += 1
            return false
        }
        partition.counts[partition.window] += 1
        return true
    }

    /// Starts the next window of `key`.
    func advance(_ key: String) -> RateLimitStats {
        var partition = partitions[key] ?? Partition()
        partition.window += 1
        partition.counts.append(0)
        partitions[key] = partition
        return stats(key)
    }

    /// Opens `key` (`/throttled` answers 200 from now on).
    func open(_ key: String) {
        partitions[key, default: Partition()].isOpen = true
    }

    func stats(_ key: String) -> RateLimitStats {
        let partition = partitions[key] ?? Partition()
        return RateLimitStats(accepted: partition.counts, refused: partition.refused)
    }
}

/// What `/ratelimited/:key/stats` reports: requests accepted in each window (the current one last) and
/// requests refused with `429`.
public struct RateLimitStats: Codable, Sendable, Equatable {
    /// Accepted requests per window, oldest first.
    public var accepted: [Int]
    /// Requests answered `429`.
    public var refused: Int

    /// Creates statistics.
    public init(accepted: [Int], refused: Int) {
        self.accepted = accepted
        self.refused = refused
    }
}
