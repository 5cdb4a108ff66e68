import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request for `path` under ``exampleBaseURL``, as the token refresher suites send it.
func authenticatedRequest(_ path: String = "data") -> URLRequest {
    URLRequest(url: exampleBaseURL.appendingPathComponent(path))
}

/// The `Authorization` header a request was sent with.
func bearer(_ request: URLRequest) -> String? {
    request.value(forHTTPHeaderField: "Authorization")
}

/// Lets a test wait until a condition over shared state holds, without sleeping or polling: whoever changes
/// that state calls ``signal()``, which checks the conditions waited on and resumes the waiters whose condition
/// holds (so a waiter is woken once, not after every change).
final class ChangeSignal: Sendable {
    private struct Waiter {
        let condition: @Sendable () -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
    }

    private let state = LockedState(State())

    /// Records a change: resumes every waiter whose condition holds now.
    func signal() {
        let conditions = state.withLock { $0.waiters.map { ($0.key, $0.value.condition) } }
        for (id, condition) in conditions where condition() {
            resume(id)
        }
    }

    /// Suspends until `condition` holds; returns early (with `false`) when the waiting task is cancelled, so a
    /// test whose time limit passes fails instead of hanging.
    @discardableResult
    func wait(until condition: @escaping @Sendable () -> Bool) async -> Bool {
        if condition() { return true }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let cancelled = state.withLock { state in
                    if Task.isCancelled { return true }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return false
                }
                // A change between the first check and now signalled nobody: check again.
                if cancelled { continuation.resume() } else if condition() { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
        return condition()
    }

    /// Resumes the waiter `id` if it is still waiting.
    private func resume(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
    }
}
