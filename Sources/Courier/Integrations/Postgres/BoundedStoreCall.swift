#if Postgres
/// One call to a database that its caller waits for no longer than a limit, and not at all once cancelled.
///
/// The call runs in a task of its own. When the limit passes, that task is cancelled and the caller gets
/// ``CourierError/Code/timedOut`` at once; when the caller is cancelled (its deadline passed), it gets
/// `CancellationError` at once. Either way the call is not awaited: a query stuck on a connection that ignores
/// cancellation (a server that accepted the connection and says nothing) cannot hold the caller.
enum BoundedStoreCall {
    private struct State<Value: Sendable> {
        var continuation: CheckedContinuation<Value, any Error>?
        var cancelled = false
        var finished = false
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    /// Runs `operation`, giving up after `limit` (measured by `sleep`) with a `timedOut` error that says
    /// `message`.
    static func run<Value: Sendable>(
        limit: Duration,
        message: @autoclosure () -> String,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let state = LockedState(State<Value>())
        let timedOut = CourierError(.timedOut, message: message())
        let finish = { @Sendable (result: Result<Value, any Error>) in
            let (continuation, timer) = state.withLock { state in
                defer {
                    state.continuation = nil
                    state.finished = true
                }
                return (state.continuation, state.timer)
            }
            timer?.cancel()
            continuation?.resume(with: result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = state.withLock { state in
                    if state.cancelled { return true }
                    state.continuation = continuation
                    return false
                }
                if cancelled { return continuation.resume(throwing: CancellationError()) }
                let work = SharedWork.start {
                    do {
                        finish(.success(try await operation()))
                    } catch {
                        finish(.failure(error))
                    }
                }
                let timer = SharedWork.start {
                    do {
                        try await sleep(limit)
                    } catch {
                        return
                    }
                    work.cancel()
                    finish(.failure(timedOut))
                }
                let finished = state.withLock { state in
                    state.work = work
                    state.timer = timer
                    return state.finished
                }
                if finished { timer.cancel() }
            }
        } onCancel: {
            let (continuation, work, timer) = state.withLock { state in
                defer {
                    state.cancelled = true
                    state.continuation = nil
                }
                return (state.continuation, state.work, state.timer)
            }
            work?.cancel()
            timer?.cancel()
            continuation?.resume(throwing: CancellationError())
        }
    }
}
#endif
