/// Calls to a store that other replicas share (a database): slow or unreachable is a failure, not a hang.
package enum StoreCall {
    /// Called, in tests, after the operation and its timer were started and before the timer is armed.
    @TaskLocal package static var beforeArming: (@Sendable () -> Void)?

    /// Runs `operation`, giving up after `limit` on the clock `sleep` waits on, with a ``CourierError/Code/timedOut``
    /// error whose message is `what` and the limit.
    ///
    /// The operation runs in a task of its own that is cancelled, not awaited, when the time is up: a store
    /// that ignores cancellation (a connection stuck on a dead peer) cannot hold the caller past the limit. A
    /// cancelled caller stops waiting at once; the operation runs on until its limit (a write the caller no longer
    /// waits for still lands) unless `cancelsWithCaller`, for an operation that only waits (a `LISTEN`), whose
    /// connection is then given back at once rather than held until the limit.
    package static func bounded<Value: Sendable>(
        _ what: String,
        limit: Duration,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        cancelsWithCaller: Bool = false,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        // The caller's continuation, and whether the caller was cancelled before it was stored.
        let race = LockedState<(continuation: CheckedContinuation<Value, any Error>?, cancelled: Bool)>((nil, false))
        let finish = { @Sendable (result: Result<Value, any Error>) in
            race.withLock { race in
                defer { race.continuation = nil }
                return race.continuation
            }?.resume(with: result)
        }
        // The timer is cancelled once the operation ends, so it leaves no sleeper behind; whether the operation
        // ended is kept beside it (not read from the caller's continuation, which a cancelled caller clears too: then
        // the operation must still be bounded).
        let timer = LockedState<(sleeper: Task<Void, Never>?, operationEnded: Bool)>((nil, false))
        // The operation's task, for a caller's cancellation to cancel when `cancelsWithCaller`.
        let running = LockedState<Task<Void, Never>?>(nil)
        func start() {
            let work = SharedWork.start {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                finish(result)
                timer.withLock { timer in
                    timer.operationEnded = true
                    return timer.sleeper
                }?.cancel()
            }
            let sleeper = SharedWork.start {
                do {
                    try await sleep(limit)
                } catch {
                    return
                }
                // The caller is told first: cancelled first, an operation that ends at once would answer with its
                // cancellation error (a CancellationError, which the caller takes for its own cancellation).
                finish(.failure(CourierError(.timedOut, message: "\(what) within \(limit)")))
                work.cancel()
            }
            beforeArming?()
            let ended = timer.withLock { timer in
                timer.sleeper = sleeper
                return timer.operationEnded
            }
            if ended { sleeper.cancel() }
            guard cancelsWithCaller else { return }
            // Stored, then the caller's cancellation read: a cancellation handler that ran in between finds the
            // task or has already marked the caller cancelled, so one of the two cancels it.
            running.withLock { $0 = work }
            if race.withLock({ $0.cancelled }) { work.cancel() }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = race.withLock { race in
                    if race.cancelled { return true }
                    race.continuation = continuation
                    return false
                }
                if cancelled { return continuation.resume(throwing: CancellationError()) }
                start()
            }
        } onCancel: {
            // A cancelled caller stops waiting at once; the operation runs on until its limit, unless it only waits.
            race.withLock { race in
                race.cancelled = true
                defer { race.continuation = nil }
                return race.continuation
            }?.resume(throwing: CancellationError())
            if cancelsWithCaller { running.withLock { $0 }?.cancel() }
        }
    }
}
