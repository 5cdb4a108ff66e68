/// The tasks waiting for requests in flight to drain, as a value: a wait, a cancellation or the owner going
/// idle goes in; the waiters to resume come out.
///
/// Both things that can be waited on keep one under their lock, next to the count they wait on:
/// ``RequestCounter/waitUntilIdle()`` and a client's shutdown. The owner decides what idle means and says
/// so when a waiter parks; `Waiter` is a `CheckedContinuation` there and a plain value in tests.
///
/// A wait takes two steps because a cancellation can arrive between them:
///
/// ```
///   begin() ──► ticket ──► park(ticket, waiter, isIdle:) ──► .suspend ──► takeAll() resumes it (idle)
///                                     │                         └───────► cancel(ticket) resumes it
///                                     └──► .resume (idle already, or cancelled before parking)
/// ```
///
/// A cancellation that arrives before the waiter is parked leaves a mark, so that parking returns
/// `.resume` instead of waiting for ever; ``end(_:)`` clears a mark left by a cancellation that came after
/// the wait was over.
struct IdleWaiters<Waiter> {
    /// What to do with a waiter that asks to park.
    enum ParkAction: Equatable {
        /// Resume it now: the owner is idle, or the wait was cancelled before the waiter parked.
        case resume
        /// It is parked; ``takeAll()`` or ``cancel(_:)`` will hand it back.
        case suspend
    }

    private var lastTicket = 0
    private var parked: [Int: Waiter] = [:]
    private var cancelledBeforeParking: Set<Int> = []

    /// How many waiters are parked.
    var count: Int { parked.count }

    /// Starts a wait; the ticket names it in the calls that follow.
    mutating func begin() -> Int {
        lastTicket += 1
        return lastTicket
    }

    /// Parks `waiter` unless the owner `isIdle` or the wait was already cancelled.
    mutating func park(_ ticket: Int, _ waiter: Waiter, isIdle: Bool) -> ParkAction {
        if isIdle || cancelledBeforeParking.remove(ticket) != nil { return .resume }
        parked[ticket] = waiter
        return .suspend
    }

    /// Cancels a wait: returns its waiter to resume, or `nil` when it is not parked (yet, or any more).
    mutating func cancel(_ ticket: Int) -> Waiter? {
        if let waiter = parked.removeValue(forKey: ticket) { return waiter }
        cancelledBeforeParking.insert(ticket)
        return nil
    }

    /// Ends a wait that has resumed, forgetting a cancellation that came too late to matter.
    mutating func end(_ ticket: Int) {
        cancelledBeforeParking.remove(ticket)
    }

    /// The owner became idle: returns every parked waiter, to resume, and forgets them.
    mutating func takeAll() -> [Waiter] {
        guard !parked.isEmpty else { return [] }
        defer { parked = [:] }
        return Array(parked.values)
    }
}

extension LockedState {
    /// Waits in the ``IdleWaiters`` at `waiters` until its owner calls ``IdleWaiters/takeAll()``; returns at
    /// once when `isIdle` (asked under the lock) says the owner is idle already, and early when the calling
    /// task is cancelled.
    ///
    /// The owner must decide it became idle before it takes this lock to call `takeAll()`, so that a waiter
    /// that finds it busy here is parked before the owner looks for waiters.
    func waitUntilIdle(
        in waiters: any WritableKeyPath<Value, IdleWaiters<CheckedContinuation<Void, Never>>> & Sendable,
        isIdle: (Value) -> Bool
    ) async {
        let ticket = withLock { $0[keyPath: waiters].begin() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let action = withLock { state in
                    state[keyPath: waiters].park(ticket, continuation, isIdle: isIdle(state))
                }
                if action == .resume { continuation.resume() }
            }
        } onCancel: {
            withLock { $0[keyPath: waiters].cancel(ticket) }?.resume()
        }
        withLock { $0[keyPath: waiters].end(ticket) }
    }
}
