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

    /// Takes up to `count` slots, atomically, from the window of `limit` requests per `window` that the
    /// replicas sharing this store share for `partition`: a replica takes a block of slots at a time, so that
    /// most requests pay no round trip to the store, and gives back with ``release(_:of:)`` what it did not
    /// use. The window starts with the first reservation after the last one ended.
    ///
    /// The default implementation grants every slot asked for, in a window of its own: a store that does not
    /// implement reservations splits nothing, and each replica paces alone, as before.
    ///
    /// - Returns: The slots granted (possibly none: the window is used up) and when their window ends.
    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation

    /// Gives back `count` slots of `reservation` that were not used, if its window has not ended (slots of an
    /// ended window are worth nothing). The default implementation does nothing.
    func release(_ count: Int, of reservation: RateLimitReservation) async throws
}

/// Slots a replica took from a shared window with ``RateLimitStore/reserve(_:in:limit:window:)``.
public struct RateLimitReservation: Sendable, Hashable {
    /// The partition the slots belong to.
    public var partition: String
    /// How many slots were granted; 0 when the window is used up.
    public var granted: Int
    /// When the window the slots belong to ends, in this replica's wall-clock time.
    public var windowEndsAt: Date
    /// Which of the partition's windows the slots belong to: a number the store increases with each new window,
    /// so that ``RateLimitStore/release(_:of:)`` gives slots back only to the window they came from.
    public var window: Int

    /// Creates a reservation.
    public init(partition: String, granted: Int, windowEndsAt: Date, window: Int = 0) {
        self.partition = partition
        self.granted = granted
        self.windowEndsAt = windowEndsAt
        self.window = window
    }
}

extension RateLimitStore {
    /// Grants all `count` slots: a store without shared reservations splits nothing.
    public func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        RateLimitReservation(
            partition: partition,
            granted: max(count, 0),
            windowEndsAt: Date().addingTimeInterval(window.timeInterval)
        )
    }

    /// Does nothing: nothing was shared.
    public func release(_ count: Int, of reservation: RateLimitReservation) async throws {}
}

/// A ``RateLimitStore`` in the process's memory: the default.
///
/// It keeps one entry per partition, the last recorded. Once it holds more than 64 (and then twice as many as the
/// last time it looked), recording drops the entries whose window reset more than a minute ago and those with no
/// reset (a limiter starts from a stored quota only until its reset), so it does not grow with the number of
/// partitions seen, and a write does not go through every entry.
public final class InMemoryRateLimitStore: RateLimitStore {
    /// Entries by partition, and how many there may be before the next look for old ones.
    private struct Table<Value> {
        // By bytes (``ExactString``), as every store must: partitions that differ in bytes never share a quota.
        var entries: [ExactString: Value] = [:]
        var pruneAt = 64

        /// Past ``pruneAt`` entries, keeps only those `isCurrent` says are, and waits for twice as many before
        /// looking again: each write's share of the work stays constant.
        mutating func prune(keeping isCurrent: (Value) -> Bool) {
            guard entries.count > pruneAt else { return }
            entries = entries.filter { isCurrent($0.value) }
            pruneAt = max(64, entries.count * 2)
        }
    }

    // No state machine: a dictionary under a lock, with no waiters.
    private let quotas = LockedState(Table<RateLimitQuota>())
    /// The shared windows, by partition: when each ends and how many of its slots are taken.
    private let windows = LockedState(Table<(endsAt: Date, taken: Int, number: Int)>())
    private let currentDate: @Sendable () -> Date

    /// Creates an empty store.
    ///
    /// - Parameter currentDate: The wall clock, to drop entries whose window is long over.
    public init(currentDate: @escaping @Sendable () -> Date = { Date() }) {
        self.currentDate = currentDate
    }

    /// The quota stored for `partition`, or `nil`.
    public func quota(for partition: String) async -> RateLimitQuota? {
        quotas.withLock { $0.entries[ExactString(partition)] }
    }

    /// Takes up to `count` of the `limit` slots of `partition`'s current window (a new one of `window` when
    /// there is none or it has ended), under one lock.
    public func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async
        -> RateLimitReservation
    {
        let now = currentDate()
        return windows.withLock { windows in
            var current = windows.entries[ExactString(partition)] ?? (endsAt: now, taken: 0, number: 0)
            if current.endsAt <= now {
                current = (endsAt: now.addingTimeInterval(window.timeInterval), taken: 0, number: current.number + 1)
            }
            let granted = min(max(count, 0), max(limit - current.taken, 0))
            current.taken += granted
            windows.entries[ExactString(partition)] = current
            windows.prune { $0.endsAt > now }
            return RateLimitReservation(
                partition: partition,
                granted: granted,
                windowEndsAt: current.endsAt,
                window: current.number
            )
        }
    }

    /// Gives back `count` unused slots of `reservation`'s window, if it is still the current one.
    public func release(_ count: Int, of reservation: RateLimitReservation) async {
        let now = currentDate()
        windows.withLock { windows in
            guard var current = windows.entries[ExactString(reservation.partition)],
                current.number == reservation.window,
                current.endsAt == reservation.windowEndsAt, current.endsAt > now
            else { return }
            current.taken -= min(max(count, 0), current.taken)
            windows.entries[ExactString(reservation.partition)] = current
        }
    }

    /// Stores `quota` for `partition`.
    public func record(_ quota: RateLimitQuota, for partition: String) async {
        let expired = currentDate().addingTimeInterval(-60)
        quotas.withLock { quotas in
            quotas.entries[ExactString(partition)] = quota
            quotas.prune { $0.resetsAt.map { $0 > expired } ?? false }
        }
    }
}
