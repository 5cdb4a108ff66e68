/// Carries a download's progress from the transfer to the progress handler, which runs in a task of its own: the
/// transfer only stores the latest report (a lock and a store per chunk; it never waits for the handler), and the
/// delivery loop hands the handler the latest report at most once per interval.
///
/// Reports are coalesced, the latest wins: a handler slower than the transfer sees fewer reports, never older ones,
/// and the transfer goes on at the network's speed. Only the first report (the head's) is never replaced. The first report is delivered at once; after each delivery the
/// loop waits out the interval on the clock, then delivers the latest report if there is a new one (or the next
/// one at once, when it comes). ``finish()`` ends the wait early, so the last report — the completed download's —
/// is delivered without waiting out the interval.
final class DownloadProgressMailbox: Sendable {
    private struct State {
        /// The first report, kept until it is delivered: the head's, with the expected length, is never replaced.
        var first: DownloadProgress?
        var hasFirst = false
        var latest: DownloadProgress?
        var isFinished = false
        var waiter: CheckedContinuation<DownloadProgress?, Never>?
        /// The interval's wait, which ``finish()`` ends early.
        var pause: CheckedContinuation<Void, Never>?
    }

    private let state = LockedState(State())

    /// Called with each report once it is posted: the tests' way to know the transfer got that far before they
    /// move a manual clock (a transfer that lags behind the body it reads would otherwise post after the move).
    @TaskLocal static var afterPost: (@Sendable (DownloadProgress) -> Void)?

    /// Stores `progress` as the latest report, replacing one not delivered yet; wakes the delivery loop when it is
    /// waiting for a report. Never waits.
    func post(_ progress: DownloadProgress) {
        let waiter = state.withLock { state -> CheckedContinuation<DownloadProgress?, Never>? in
            defer { state.hasFirst = true }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if state.hasFirst {
                state.latest = progress
            } else {
                state.first = progress
            }
            return nil
        }
        waiter?.resume(returning: progress)
        Self.afterPost?(progress)
    }

    /// Says that no report follows: the delivery loop delivers the latest one, if any, and ends.
    func finish() {
        let (waiter, pause) = state.withLock { state in
            state.isFinished = true
            defer { (state.waiter, state.pause) = (nil, nil) }
            return (state.waiter, state.pause)
        }
        waiter?.resume(returning: nil)
        pause?.resume()
    }

    /// The latest report not delivered yet, waiting for one if there is none; `nil` once finished and delivered.
    func next() async -> DownloadProgress? {
        await withCheckedContinuation { (continuation: CheckedContinuation<DownloadProgress?, Never>) in
            let ready = state.withLock { state -> DownloadProgress?? in
                if let first = state.first {
                    state.first = nil
                    return .some(first)
                }
                if let latest = state.latest {
                    state.latest = nil
                    return .some(latest)
                }
                if state.isFinished { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Delivers reports to `handler` until ``finish()``, at most one per `interval` of `clock` (the first, and the
    /// last after ``finish()``, at once).
    func deliver<C: Clock<Duration>>(
        every interval: Duration,
        clock: C,
        to handler: @escaping @Sendable (DownloadProgress) async -> Void
    ) async {
        while let report = await next() {
            await handler(report)
            guard interval > .zero else { continue }
            // The interval, or until the download is over, whichever comes first; the handler never runs in a task
            // cancelled for this.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await clock.sleep(for: interval) }
                group.addTask { await self.waitUntilFinished() }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Returns once ``finish()`` is called, or the task is cancelled.
    private func waitUntilFinished() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state in
                    if state.isFinished || Task.isCancelled { return true }
                    state.pause = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            let pause = state.withLock { state in
                defer { state.pause = nil }
                return state.pause
            }
            pause?.resume()
        }
    }
}
