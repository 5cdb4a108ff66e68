public import Foundation

/// What a server said about one partition's quota, as a ``RateLimitStore`` keeps it.
public struct RateLimitQuota: Sendable, Hashable, Codable {
    /// Requests allowed per window, when known.
    public var limit: Int?
    /// Requests left in the current window, after the requests this replica has in flight.
    public var remaining: Int
    /// When the window resets, in wall-clock time, when known.
    public var resetsAt: Date?
    /// The length of a window, when known.
    public var window: Duration?

    /// Creates a quota.
    public init(limit: Int?, remaining: Int, resetsAt: Date?, window: Duration?) {
        self.limit = limit
        self.remaining = remaining
        self.resetsAt = resetsAt
        self.window = window
    }
}

/// Where a ``RateLimiter`` keeps what servers said about their quotas, so that several replicas of a service
/// can share it.
///
/// The limiter paces requests in memory (its waiters and reservations are local to the process) and uses the
/// store for what other replicas can use:
/// - after a response that carries rate-limit fields, it writes the partition's quota with
///   ``record(_:for:)``;
/// - the first time a partition is used in this process, it reads ``quota(for:)``, and when the stored
///   window has not reset yet, it starts from that quota instead of sending a probe into a limit another
///   replica has used up.
///
/// Replicas share the server's numbers, not their reservations: each replica reconciles with every response
/// it gets (the server's `remaining` counts all replicas' requests), but requests that other replicas have
/// in flight are not known here. To split a quota strictly, give each replica a client-side limit of its
/// share (``RateLimitPolicy/clientLimit``) as well.
///
/// A store that fails is not fatal: the limiter ignores its errors and goes on with what it knows.
/// ``InMemoryRateLimitStore`` is the default. Back it with a store the replicas already share (a Redis hash
/// per partition with an expiry at `resetsAt`, a database row): Courier ships no distributed store.
public protocol RateLimitStore: Sendable {
    /// The quota stored for `partition`, or `nil`.
    func quota(for partition: String) async throws -> RateLimitQuota?

    /// Stores `quota` for `partition`, replacing what was there.
    func record(_ quota: RateLimitQuota, for partition: String) async throws
}

/// A ``RateLimitStore`` in the process's memory: the default.
///
/// It keeps one entry per partition, the last recorded. Once it holds more than 64, recording drops the
/// entries whose window reset more than a minute ago, so it does not grow with the number of partitions seen.
public final class InMemoryRateLimitStore: RateLimitStore {
    // No state machine: a dictionary under a lock, with no waiters.
    private let quotas = LockedState<[String: RateLimitQuota]>([:])
    private let currentDate: @Sendable () -> Date

    /// Creates an empty store.
    ///
    /// - Parameter currentDate: The wall clock, to drop entries whose window is long over.
    public init(currentDate: @escaping @Sendable () -> Date = { Date() }) {
        self.currentDate = currentDate
    }

    /// The quota stored for `partition`, or `nil`.
    public func quota(for partition: String) async -> RateLimitQuota? {
        quotas.withLock { $0[partition] }
    }

    /// Stores `quota` for `partition`.
    public func record(_ quota: RateLimitQuota, for partition: String) async {
        let expired = currentDate().addingTimeInterval(-60)
        quotas.withLock { quotas in
            quotas[partition] = quota
            if quotas.count > 64 {
                quotas = quotas.filter { $0.value.resetsAt.map { $0 > expired } ?? true }
            }
        }
    }
}
