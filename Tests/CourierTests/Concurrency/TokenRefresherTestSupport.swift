import Courier

/// Lets a test wait until a condition over shared state holds, without sleeping or polling: whoever changes
/// that state calls ``signal()``, and ``wait(until:)`` re-checks its condition after every signal.
final class ChangeSignal: Sendable {
    private struct State {
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }

    private let state = LockedState(State())

    /// Records a change and wakes every waiter to re-check its condition.
    func signal() {
        let waiters = state.withLock { state in
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until `condition` holds; returns early (with `false`) when the waiting task is cancelled, so a
    /// test whose time limit passes fails instead of hanging.
    @discardableResult
    func wait(until condition: () -> Bool) async -> Bool {
        while !Task.isCancelled {
            let generation = state.withLock { $0.generation }
            if condition() { return true }
            let id = state.withLock { state in
                defer { state.nextID += 1 }
                return state.nextID
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        if state.generation != generation || Task.isCancelled { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.resume()
            }
        }
        return false
    }
}
