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
/// or let ``run(whenSleeping:_:)`` move it to the earliest deadline each time the code has nothing left to do
/// but wait for the clock, however many timers it sets at once:
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

        /// - Parameter offset: The time since the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// Returns the instant `duration` later.
        ///
        /// - Parameter duration: The time to add.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// Returns the time from this instant to `other`.
        ///
        /// - Returns: `other - self`.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` is earlier than `rhs`.
        ///
        /// - Parameters:
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
        /// The run's executor, when time must wait for the run to be quiescent too.
        let executor: QuiescenceTrackingExecutor?
        let continuation: CheckedContinuation<Bool, Never>

        /// Whether enough tasks sleep and the run (if any) has nothing left to do before time moves. Called
        /// under the clock's lock; the executor's lock nests inside it, never the other way round.
        func isReady(sleepers: Int) -> Bool {
            sleepers >= count && (executor?.isQuiescent ?? true)
        }
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
        _ = await waitForSleepers(count: count, run: nil, executor: nil)
    }

    /// Runs `operation`, moving time to the earliest pending deadline each time the operation has nothing
    /// left to do but wait for the clock, until it finishes; returns its result.
    ///
    /// This runs code that sleeps (retry backoff, timeouts, polling, token expiry) in virtual time without
    /// scripting each step:
    ///
    /// ```swift
    /// let profile = try await clock.run { try await service.loadProfile() }
    /// #expect(clock.now.offset == .seconds(3))   // it backed off 1 s, then 2 s
    /// ```
    ///
    /// **When time moves.** The operation runs with a task executor of the run's own, which counts the jobs
    /// of the operation's tasks. Time moves to the next deadline only when none of them is running or about to
    /// run (every one is suspended) and at least `sleepers` tasks sleep on the clock. So with several timers
    /// at once — the recommended whole-call timeout beside a per-attempt timeout, a hedge's delay beside an
    /// attempt — time moves to the *earliest* of them once all are set, never to a later one that happened to
    /// be set first, and the default needs no count. For what it sees, the outcome is the same on every run.
    ///
    /// **What it sees.** The operation's task and every structured child task it creates (task groups,
    /// `async let`, and so the middleware's timeouts and hedges), the work Courier shares between callers (a
    /// `TokenRefresher`'s refresh, a coalesced call from `Middleware.coalescing(ignoringHeaders:)`, a streamed body's
    /// idle and total timeouts, the reading of `StreamedBody(chunks)`, so a `MockChunk.delay`), and the
    /// code of the (default) actors they call. So the recommended stack — retry, a refresh, both timeouts — runs
    /// to the same end on every run. It does not see work in the code's own unstructured tasks (`Task { }`,
    /// `Task.detached`), nor code on an actor with an executor of its own (the main actor), nor I/O in flight (a
    /// real transport).
    /// While the operation waits on such work with a timer pending, time may move before the work is done;
    /// when that matters, drive the clock step by step with ``waitForSleepers(count:)`` and ``advance(by:)``,
    /// or, when that work sleeps on this clock as well, pass the number of tasks that sleep at once.
    ///
    /// A step that never suspends (a loop spinning on `Task.yield()`) keeps time from moving; put a time limit
    /// on the test (`.timeLimit(.minutes(1))`), whose cancellation ends the run.
    ///
    /// - Parameters:
    ///   - sleepers: How many tasks must sleep before time moves; 1 (the default) suits everything the run
    ///     sees. A larger number waits for sleepers in tasks it does not see.
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
        let executor = QuiescenceTrackingExecutor { [self] in self.runBecameQuiescent() }
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask(executorPreference: executor) {
                defer { self.finishRun(run) }
                // Work Courier shares between callers (a token refresh, a coalesced call) prefers this executor
                // too, so the run counts it.
                return try await SharedWork.$executor.withValue(executor) { try await operation() }
            }
            // The driver runs elsewhere, so that it never counts as the run's own work.
            group.addTask(executorPreference: globalConcurrentExecutor) {
                while await self.waitForSleepers(count: sleepers, run: run, executor: executor) {
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

    /// Waits until `count` tasks sleep and `executor` (if any) is quiescent (returns `true`), or the run `run`
    /// finishes or the waiting task is cancelled (returns `false`).
    private func waitForSleepers(count: Int, run: Int?, executor: QuiescenceTrackingExecutor?) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let ready = state.withLock { state -> Bool? in
                    if let run, state.finishedRuns.contains(run) { return false }
                    let waiter = SleeperWaiter(
                        id: id,
                        count: count,
                        run: run,
                        executor: executor,
                        continuation: continuation
                    )
                    if waiter.isReady(sleepers: state.sleepers.count) { return true }
                    if Task.isCancelled { return false }
                    state.sleeperWaiters.append(waiter)
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

    /// Resumes the waiters of a run whose last pending job has just finished, if enough tasks sleep.
    private func runBecameQuiescent() {
        let ready = state.withLock { Self.takeReadyWaiters(&$0) }
        for waiter in ready { waiter.continuation.resume(returning: true) }
    }

    private static func takeReadyWaiters(_ state: inout State) -> [SleeperWaiter] {
        let count = state.sleepers.count
        let ready = state.sleeperWaiters.filter { $0.isReady(sleepers: count) }
        state.sleeperWaiters.removeAll { ready.map(\.id).contains($0.id) }
        return ready
    }
}
