import Courier

/// A clock whose time moves only when a test advances it, so that retry backoff, timeouts, circuit
/// breakers and token expiry run in virtual time.
///
/// Inject it wherever the code under test takes a `some Clock<Duration>`, then either drive it step by
/// step:
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await clock.sleep(for: .seconds(5)) }
/// await clock.waitForSleepers(count: 1)   // the task is asleep now
/// #expect(clock.pendingDeadlines == [.init(offset: .seconds(5))])
/// clock.advance(by: .seconds(5))          // and wakes up
/// ```
///
/// or let ``run(whenSleeping:_:)`` move it to each deadline while the code runs:
///
/// ```swift
/// let profile = try await clock.run { try await service.loadProfile() }
/// #expect(clock.now.offset == .seconds(3))
/// ```
///
/// Sleepers wake in deadline order when time reaches their deadline. A sleeping task that is cancelled
/// throws `CancellationError` at once, also when the cancellation comes just as it starts to sleep.
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
        let id: Int
        let count: Int
        let run: Int?
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Sleeper] = []
        var sleeperWaiters: [SleeperWaiter] = []
        var nextWaiterID = 0
        var totalSleeps = 0
        var finishedRuns: Set<Int> = []
    }

    private let state = LockedState(State())

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
                let (outcome, waiters) = state.withLock { state -> (Result<Void, any Error>?, [SleeperWaiter]) in
                    state.totalSleeps += 1
                    if deadline <= state.now { return (.success(()), []) }
                    // Checked under the lock: `onCancel` takes the lock after the cancellation flag is set, so
                    // either it finds this sleeper or this check sees the cancellation.
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (nil, Self.takeReadyWaiters(&state))
                }
                if let outcome { continuation.resume(with: outcome) }
                for waiter in waiters { waiter.continuation.resume(returning: true) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come, earliest first.
    ///
    /// - Parameter duration: How far to move; must not be negative.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock cannot go back in time")
        let target = state.withLock { $0.now.advanced(by: duration) }
        advance(to: target)
    }

    /// Moves time forward to `instant` (if it is later than now) and wakes every sleeper whose deadline
    /// has come, earliest first.
    ///
    /// The woken tasks run concurrently once resumed; to see them one at a time, advance one deadline at
    /// a time (``advanceToNextDeadline()``) and wait for each (with ``Arrivals``, for example).
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

    /// Suspends until at least `count` tasks are asleep on this clock, or until the waiting task is
    /// cancelled.
    ///
    /// Cancellation ends the wait early (without throwing), so that a test whose time limit passes goes on
    /// to fail its expectations instead of hanging.
    ///
    /// - Parameter count: The number of sleepers to wait for.
    public func waitForSleepers(count: Int) async {
        _ = await waitForSleepers(count: count, run: nil)
    }

    /// Runs `operation`, moving time to the next deadline whenever `sleepers` tasks are asleep, until the
    /// operation finishes; returns its result.
    ///
    /// This runs code that sleeps one step at a time (retry backoff, polling, token expiry) in virtual
    /// time without scripting each step:
    ///
    /// ```swift
    /// let profile = try await clock.run { try await service.loadProfile() }
    /// #expect(clock.now.offset == .seconds(3))   // it backed off 1 s, then 2 s
    /// ```
    ///
    /// Time moves only when exactly the expected number of tasks sleep, so the outcome is the same on
    /// every run. For code that sleeps in several tasks at once (a timeout racing a slow reply), pass
    /// that number, or drive the clock step by step with ``waitForSleepers(count:)`` and
    /// ``advance(by:)``.
    ///
    /// - Parameters:
    ///   - sleepers: How many tasks must be asleep before time moves to the next deadline.
    ///   - operation: The code under test.
    /// - Returns: What `operation` returns.
    /// - Throws: What `operation` throws.
    public func run<Result: Sendable>(
        whenSleeping sleepers: Int = 1,
        _ operation: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let run = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                defer { self.finishRun(run) }
                return try await operation()
            }
            group.addTask {
                while await self.waitForSleepers(count: sleepers, run: run) {
                    self.advanceToNextDeadline()
                }
                return nil
            }
            var result: Result?
            for try await value in group {
                if let value { result = value }
            }
            // The operation's child returned (it did not throw), so its value was collected.
            return result!
        }
    }

    /// Waits until `count` tasks sleep (returns `true`), or the run `run` finishes or the waiting task is
    /// cancelled (returns `false`).
    private func waitForSleepers(count: Int, run: Int?) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let ready = state.withLock { state -> Bool? in
                    if let run, state.finishedRuns.contains(run) { return false }
                    if state.sleepers.count >= count { return true }
                    if Task.isCancelled { return false }
                    state.sleeperWaiters.append(
                        SleeperWaiter(id: id, count: count, run: run, continuation: continuation)
                    )
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.sleeperWaiters.firstIndex { $0.id == id }.map { state.sleeperWaiters.remove(at: $0) }
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    private func finishRun(_ run: Int) {
        let waiters = state.withLock { state -> [SleeperWaiter] in
            state.finishedRuns.insert(run)
            let waiters = state.sleeperWaiters.filter { $0.run == run }
            state.sleeperWaiters.removeAll { $0.run == run }
            return waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: false) }
    }

    private static func takeReadyWaiters(_ state: inout State) -> [SleeperWaiter] {
        let count = state.sleepers.count
        let ready = state.sleeperWaiters.filter { $0.count <= count }
        state.sleeperWaiters.removeAll { $0.count <= count }
        return ready
    }
}
