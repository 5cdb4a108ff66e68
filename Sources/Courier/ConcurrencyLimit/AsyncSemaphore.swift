/// A counting semaphore for async code: FIFO-fair and cancellation-aware.
///
/// - **FIFO**: waiters are served in the order they started waiting. A released permit is handed straight
///   to the first waiter, never put back in the pool while someone waits, so a newcomer cannot take it
///   ahead of the queue.
/// - **Cancellation**: a waiting task that is cancelled leaves the queue at once and throws
///   `CancellationError`; it never takes a permit, so none leaks. A task already cancelled when it calls
///   ``acquire()`` throws without taking one. A waiter that was handed a permit just before its
///   cancellation returns normally and owns the permit (it must release it as usual).
/// - **Bounded queue** (optional): with `maxWaiters`, an acquire that would make the queue longer throws
///   ``QueueFull`` at once.
///
/// The state and its transitions are an ``AsyncSemaphoreStateMachine`` under one lock (`LockedState`, a pthread
/// mutex); this type resumes the continuations it returns, outside the lock.
final class AsyncSemaphore: Sendable {
    /// Thrown by ``acquire()`` when `maxWaiters` tasks are already waiting.
    struct QueueFull: Error {}

    private typealias Machine = AsyncSemaphoreStateMachine<CheckedContinuation<Void, any Error>>

    private let state: LockedState<Machine>
    /// The number of permits the semaphore was created with.
    let capacity: Int
    /// The most tasks that may wait at once, or `nil` for no limit.
    let maxWaiters: Int?

    /// - Parameters:
    ///   - permits: How many tasks may hold a permit at once; at least 1.
    ///   - maxWaiters: The most tasks that may wait at once (`nil`: no limit); at least 0.
    init(permits: Int, maxWaiters: Int? = nil) {
        self.state = LockedState(Machine(permits: permits, maxWaiters: maxWaiters))
        self.capacity = permits
        self.maxWaiters = maxWaiters
    }

    /// How many permits are free now.
    var availablePermits: Int { state.withLock { $0.availablePermits } }

    /// How many tasks are waiting now.
    var waiterCount: Int { state.withLock { $0.waiterCount } }

    /// Takes a permit if one is free and nobody is waiting.
    ///
    /// - Returns: Whether a permit was taken.
    func tryAcquire() -> Bool {
        state.withLock { $0.tryAcquire() }
    }

    /// Takes a permit, waiting in line for one if none is free.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before it gets a permit (it then holds
    ///   none), or ``QueueFull`` when `maxWaiters` tasks are already waiting.
    func acquire() async throws {
        try Task.checkCancellation()
        // The fast path takes no continuation.
        let id: Int
        switch state.withLock({ $0.acquire() }) {
        case .acquired: return
        case .queueFull: throw QueueFull()
        case .suspend(let waiterID): id = waiterID
        }
        // Queued: the call's record (when a logging or timing layer keeps one) learns how long.
        try await CallRecord.measuring(.slot) { try await waitForPermit(id: id) }
    }

    private func waitForPermit(id: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Task.isCancelled is read under the lock: a cancellation either happened before (seen here) or
                // its handler runs after this section and finds the waiter in the queue.
                switch state.withLock({ $0.enqueue(continuation, id: id, isCancelled: Task.isCancelled) }) {
                case .waiting: break
                case .acquired: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queueFull: continuation.resume(throwing: QueueFull())
                }
            }
        } onCancel: {
            state.withLock { $0.cancel(id: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Returns a permit: hands it to the first waiter, or puts it back in the pool when nobody waits.
    func release() {
        state.withLock { $0.release() }?.resume()
    }
}
