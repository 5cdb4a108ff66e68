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
/// All state lives under one lock (`LockedState`, a pthread mutex); continuations are resumed outside it.
final class AsyncSemaphore: Sendable {
    /// Thrown by ``acquire()`` when `maxWaiters` tasks are already waiting.
    struct QueueFull: Error {}

    private struct State {
        var permits: Int
        /// Waiter ids in arrival order from `head`. Ids of waiters that left stay here (they are no longer
        /// in `waiters`) until a release passes them or a compaction drops them.
        var queue: [Int] = []
        var head = 0
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextID = 0

        /// Removes the first waiter still waiting, if any.
        mutating func dequeue() -> CheckedContinuation<Void, any Error>? {
            defer { compactIfSparse() }
            while head < queue.count {
                let id = queue[head]
                head += 1
                if let continuation = waiters.removeValue(forKey: id) { return continuation }
            }
            return nil
        }

        /// Keeps the queue's size proportional to the number of live waiters, so waiters that leave (for
        /// example by timing out while the permits are held for a long time) cannot grow it without bound.
        mutating func compactIfSparse() {
            if head == queue.count {
                queue.removeAll(keepingCapacity: queue.count <= 1024)
                head = 0
            } else if queue.count - head > 2 * waiters.count + 32 {
                queue = queue[head...].filter { waiters[$0] != nil }
                head = 0
            } else if head > 1024, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }
    }

    private let state: LockedState<State>
    /// The number of permits the semaphore was created with.
    let capacity: Int
    /// The most tasks that may wait at once, or `nil` for no limit.
    let maxWaiters: Int?

    /// Creates a semaphore.
    ///
    /// - Parameters:
    ///   - permits: How many tasks may hold a permit at once; at least 1.
    ///   - maxWaiters: The most tasks that may wait at once (`nil`: no limit); at least 0.
    init(permits: Int, maxWaiters: Int? = nil) {
        precondition(permits > 0, "a semaphore needs at least one permit, not \(permits)")
        precondition((maxWaiters ?? 0) >= 0, "maxWaiters must not be negative")
        self.capacity = permits
        self.maxWaiters = maxWaiters
        self.state = LockedState(State(permits: permits))
    }

    /// How many permits are free now.
    var availablePermits: Int { state.withLock { $0.permits } }

    /// How many tasks are waiting now.
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Takes a permit if one is free and nobody is waiting.
    ///
    /// - Returns: Whether a permit was taken.
    func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.permits > 0 else { return false }
            state.permits -= 1
            return true
        }
    }

    /// Takes a permit, waiting in line for one if none is free.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before it gets a permit (it then holds
    ///   none), or ``QueueFull`` when `maxWaiters` tasks are already waiting.
    func acquire() async throws {
        try Task.checkCancellation()
        // The fast path takes no continuation. Free permits and waiters never coexist: a release hands its
        // permit to the first waiter instead of returning it to the pool.
        let id = try state.withLock { state -> Int? in
            if state.permits > 0 {
                state.permits -= 1
                return nil
            }
            if let maxWaiters, state.waiters.count >= maxWaiters { throw QueueFull() }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Enqueued { case waiting, gotPermit, cancelled, full }
                let outcome = state.withLock { state -> Enqueued in
                    // Checked under the lock: a cancellation either happened before (seen here) or its
                    // handler runs after this section and finds the waiter in the queue.
                    if Task.isCancelled { return .cancelled }
                    if state.permits > 0 {
                        state.permits -= 1
                        return .gotPermit
                    }
                    if let maxWaiters, state.waiters.count >= maxWaiters { return .full }
                    state.waiters[id] = continuation
                    state.queue.append(id)
                    return .waiting
                }
                switch outcome {
                case .waiting: break
                case .gotPermit: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .full: continuation.resume(throwing: QueueFull())
                }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                let continuation = state.waiters.removeValue(forKey: id)
                if continuation != nil { state.compactIfSparse() }
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Returns a permit: hands it to the first waiter, or puts it back in the pool when nobody waits.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if let next = state.dequeue() { return next }
            precondition(state.permits < capacity, "AsyncSemaphore released more often than acquired")
            state.permits += 1
            return nil
        }
        next?.resume()
    }
}
