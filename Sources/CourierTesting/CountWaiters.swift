import Courier

/// The tasks waiting for a count (arrivals, held requests) to reach their targets. It lives in its owner's
/// locked state, so that the count and the waiters change together under one lock.
struct CountWaiters {
    private struct Waiter {
        let id: Int
        let target: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private var waiters: [Waiter] = []
    private var nextID = 0

    /// Takes the waiters whose target `count` reaches; resume them after leaving the lock.
    mutating func takeReached(_ count: Int) -> [CheckedContinuation<Void, Never>] {
        let reached = waiters.filter { $0.target <= count }
        waiters.removeAll { $0.target <= count }
        return reached.map(\.continuation)
    }

    /// Suspends until the count at `count` in `state` reaches `target`, or until the waiting task is
    /// cancelled: cancellation ends the wait early (without throwing), so that a test whose time limit passes
    /// goes on to fail its expectations instead of hanging.
    static func wait<State>(
        in state: LockedState<State>,
        at waiters: any WritableKeyPath<State, CountWaiters> & Sendable,
        until count: any KeyPath<State, Int> & Sendable,
        reaches target: Int
    ) async {
        let id = state.withLock { state in
            defer { state[keyPath: waiters].nextID += 1 }
            return state[keyPath: waiters].nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    // Checked under the lock: `onCancel` takes the lock after the cancellation flag is set, so
                    // either it finds this waiter or this check sees the cancellation.
                    if state[keyPath: count] >= target || Task.isCancelled { return true }
                    state[keyPath: waiters].waiters.append(Waiter(id: id, target: target, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state[keyPath: waiters].waiters.firstIndex { $0.id == id }.map {
                    state[keyPath: waiters].waiters.remove(at: $0)
                }
            }
            waiter?.continuation.resume()
        }
    }
}
