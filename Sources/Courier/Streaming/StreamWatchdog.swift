import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Ends a streamed body that waits too long for its next chunk (the idle timeout) or runs past its total
/// timeout, with one sleeping task per body rather than a timer per chunk.
///
/// The idle timeout is the server's silence: the time since the last chunk arrived. It does not count while
/// the transport is paused because the reader is slow to take buffered chunks (it starts again when the
/// reader lets the transport go on). The body records the time of each chunk (one clock reading); the
/// watchdog sleeps until one idle period after the last one it saw, and looks again. So it fires one idle
/// period after the last chunk, and wakes at most once per idle period while chunks flow.
enum StreamWatchdog {
    /// Watches `body` until it ends.
    ///
    /// - Parameters:
    ///   - idleTimeout: The longest a read may wait for the next chunk.
    ///   - totalDeadline: How long from `start` the whole body may take.
    static func watch<C: Clock<Duration>>(
        _ body: StreamedBody,
        idleTimeout: Duration?,
        totalTimeout: Duration?,
        from start: C.Instant,
        clock: C,
        request: URLRequest
    ) {
        guard idleTimeout != nil || totalTimeout != nil else { return }
        let pipe = body.pipe
        pipe.recordProgress { start.duration(to: clock.now) }
        // On the executor shared work prefers (ManualClock.run's in tests), so that time does not move while it runs.
        let watcher = SharedWork.task {
            while true {
                let (lastProgress, isPaused, ended) = pipe.progress
                if ended { return }
                let now = start.duration(to: clock.now)
                if let totalTimeout, now >= totalTimeout {
                    pipe.fail(timedOut(request, after: totalTimeout, idle: false))
                    return
                }
                if let idleTimeout, !isPaused, now - lastProgress >= idleTimeout {
                    pipe.fail(timedOut(request, after: idleTimeout, idle: true))
                    return
                }
                let idleWake = idleTimeout.map { (isPaused ? now : lastProgress) + $0 }
                // One of the two is set (checked above).
                let wake = [idleWake, totalTimeout].compactMap { $0 }.min() ?? now
                do {
                    try await clock.sleep(until: start.advanced(by: wake), tolerance: nil)
                } catch {
                    return
                }
            }
        }
        pipe.onEnd { _ in watcher.cancel() }
    }

    static func timedOut(_ request: URLRequest, after duration: Duration, idle: Bool) -> CourierError {
        let message =
            idle
            ? "the response body sent nothing for \(duration) (the stream's idle timeout)"
            : "the streamed call took longer than its total timeout of \(duration)"
        return CourierError(.timedOut, message: message, request: request)
    }
}
