/// The state of an ``AsyncSemaphore``, as a value: each event goes in, what to do comes out.
///
/// `Waiter` is what the semaphore resumes (a continuation); tests use plain values. The semaphore keeps the
/// machine under its lock and resumes the waiters it returns outside it.
///
/// The rules:
/// - **Free permits and waiters never coexist.** A release hands its permit to the first waiter still
///   waiting; only when nobody waits does it go back to the pool.
/// - **FIFO.** Waiters are served in the order they were enqueued; a waiter that left (cancelled) is skipped.
/// - **Two steps to wait.** ``acquire()`` either takes a free permit or hands out an id; the caller then
///   makes its continuation and ``enqueue(_:id:isCancelled:)``s it. A release in between leaves a free
///   permit, which the enqueue takes instead of waiting; a cancellation in between is seen by the enqueue.
/// - **Bounded queue** (optional): with `maxWaiters`, a caller that would make the queue longer is refused.
struct AsyncSemaphoreStateMachine<Waiter> {
    /// What ``acquire()`` decided.
    enum AcquireAction: Equatable {
        /// A permit was free and is now the caller's.
        case acquired
        /// No permit is free: make a continuation and enqueue it under `id`.
        case suspend(id: Int)
        /// `maxWaiters` callers already wait.
        case queueFull
    }

    /// What ``enqueue(_:id:isCancelled:)`` decided.
    enum EnqueueAction: Equatable {
        /// The waiter is in the queue; a release or a cancellation resumes it.
        case waiting
        /// A permit was released meanwhile and is now the caller's: resume the waiter at once.
        case acquired
        /// The caller was cancelled: resume the waiter with `CancellationError`; it holds no permit.
        case cancelled
        /// `maxWaiters` callers already wait: resume the waiter with the queue-full error.
        case queueFull
    }

    /// The number of permits the semaphore was created with.
    let capacity: Int
    /// The most callers that may wait at once, or `nil` for no limit.
    let maxWaiters: Int?
    /// How many permits are free.
    private(set) var availablePermits: Int
    /// Waiter ids in arrival order from `head`. Ids of waiters that left stay here (they are no longer in
    /// `waiters`) until a release passes them or a compaction drops them.
    private var queue: [Int] = []
    private var head = 0
    private var waiters: [Int: Waiter] = [:]
    private var lastID = 0

    init(permits: Int, maxWaiters: Int?) {
        precondition(permits > 0, "a semaphore needs at least one permit, not \(permits)")
        precondition((maxWaiters ?? 0) >= 0, "maxWaiters must not be negative")
        self.capacity = permits
        self.maxWaiters = maxWaiters
        self.availablePermits = permits
    }

    /// How many callers are waiting.
    var waiterCount: Int { waiters.count }

    /// How many ids the queue holds, including those of waiters that left; bounded by the compaction.
    var queueStorageCount: Int { queue.count - head }

    private var isQueueFull: Bool {
        guard let maxWaiters else { return false }
        return waiters.count >= maxWaiters
    }

    // MARK: Events

    /// Takes a free permit, never waiting.
    mutating func tryAcquire() -> Bool {
        guard availablePermits > 0 else { return false }
        availablePermits -= 1
        return true
    }

    /// A caller wants a permit.
    mutating func acquire() -> AcquireAction {
        if tryAcquire() { return .acquired }
        if isQueueFull { return .queueFull }
        lastID += 1
        return .suspend(id: lastID)
    }

    /// The caller told to suspend under `id` has made its `waiter`; `isCancelled` is its task's cancellation,
    /// read under the same lock, so a cancellation handler that runs later finds the waiter in the queue.
    mutating func enqueue(_ waiter: Waiter, id: Int, isCancelled: Bool) -> EnqueueAction {
        if isCancelled { return .cancelled }
        if tryAcquire() { return .acquired }
        if isQueueFull { return .queueFull }
        waiters[id] = waiter
        queue.append(id)
        return .waiting
    }

    /// The caller waiting under `id` was cancelled.
    ///
    /// - Returns: Its waiter, to resume with `CancellationError`, or `nil` when it is no longer waiting (it was
    ///   handed a permit, or has not enqueued yet and will see the cancellation when it does).
    mutating func cancel(id: Int) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        compactIfSparse()
        return waiter
    }

    /// A permit is returned.
    ///
    /// - Returns: The first waiter still waiting, which now owns the permit and must be resumed; `nil` when
    ///   nobody waits and the permit went back to the pool.
    mutating func release() -> Waiter? {
        defer { compactIfSparse() }
        while head < queue.count {
            let id = queue[head]
            head += 1
            if let waiter = waiters.removeValue(forKey: id) { return waiter }
        }
        precondition(availablePermits < capacity, "AsyncSemaphore released more often than acquired")
        availablePermits += 1
        return nil
    }

    /// Keeps the queue's size proportional to the number of live waiters, so waiters that leave (for example
    /// by timing out while the permits are held for a long time) cannot grow it without bound.
    private mutating func compactIfSparse() {
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
