import Synchronization

/// A clock whose time moves only when a test advances it, so that retry backoff, timeouts, circuit
/// breakers and token expiry run in virtual time.
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await clock.sleep(for: .seconds(5)) }
/// await clock.waitForSleepers(count: 1)   // the task is asleep now
/// clock.advance(by: .seconds(5))          // and wakes up
/// ```
///
/// Sleepers wake in deadline order when time reaches their deadline. A sleeping task that is cancelled
/// throws `CancellationError` at once.
public final class ManualClock: Clock, Sendable {
    /// A point in the clock's virtual time: an offset from its start.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// The time since the clock's start.
        public var offset: Duration

        /// Creates an instant.
        ///
        /// - Parameter offset: The time since the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// Returns the instant `duration` later.
        ///
        /// - Parameter duration: The time to add.
        /// - Returns: The later instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// Returns the time from this instant to `other`.
        ///
        /// - Parameter other: Another instant.
        /// - Returns: `other - self`.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` is earlier than `rhs`.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: `true` when `lhs` is earlier.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The offset, for example `2.5 seconds`.
        public var description: String { "\(offset)" }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct SleeperWaiter {
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Sleeper] = []
        var sleeperWaiters: [SleeperWaiter] = []
        var totalSleeps = 0
    }

    private let state = Mutex(State())

    /// Creates a clock at offset zero.
    public init() {}

    /// The current virtual time.
    public var now: Instant { state.withLock { $0.now } }

    /// The clock's resolution: exact.
    public var minimumResolution: Duration { .zero }

    /// How many tasks are asleep on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many sleeps have started on this clock since it was created.
    public var totalSleeps: Int { state.withLock { $0.totalSleeps } }

    /// The deadlines of the tasks asleep now, earliest first.
    public var pendingDeadlines: [Instant] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }

    /// Suspends until the clock reaches `deadline`.
    ///
    /// - Parameters:
    ///   - deadline: When to wake.
    ///   - tolerance: Ignored.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (wakeNow, waiters) = state.withLock { state -> (Bool, [SleeperWaiter]) in
                    state.totalSleeps += 1
                    if deadline <= state.now { return (true, []) }
                    // A cancellation whose handler ran before this sleeper registered (and so found nothing
                    // to wake) is seen here, under the lock; the check after the wait then throws.
                    if Task.isCancelled { return (true, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, Self.takeReadyWaiters(&state))
                }
                if wakeNow { continuation.resume() }
                for waiter in waiters { waiter.continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        // A cancellation that arrived before the sleeper registered is seen here.
        try Task.checkCancellation()
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come.
    ///
    /// - Parameter duration: How far to move; must not be negative.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock cannot go back in time")
        advance(to: now.advanced(by: duration))
    }

    /// Moves time forward to `instant` (if it is later than now) and wakes every sleeper whose deadline
    /// has come, earliest first.
    ///
    /// - Parameter instant: The new time.
    public func advance(to instant: Instant) {
        let woken = state.withLock { state -> [Sleeper] in
            if instant > state.now { state.now = instant }
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }

    /// Moves time to the earliest pending deadline and wakes the sleepers due then.
    ///
    /// - Returns: `false` when nobody is asleep.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        guard let next = pendingDeadlines.first else { return false }
        advance(to: next)
        return true
    }

    /// Suspends until at least `count` tasks are asleep on this clock.
    ///
    /// - Parameter count: The number of sleepers to wait for.
    public func waitForSleepers(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append(SleeperWaiter(count: count, continuation: continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private static func takeReadyWaiters(_ state: inout State) -> [SleeperWaiter] {
        let count = state.sleepers.count
        let ready = state.sleeperWaiters.filter { $0.count <= count }
        state.sleeperWaiters.removeAll { $0.count <= count }
        return ready
    }
}
