import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Cuts tail latency for idempotent requests: when no response has come after `delay`, sends another
    /// attempt; the first response wins and the other attempts are cancelled.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: baseURL,
    ///     middleware: [.retry(.default), .hedging(after: .milliseconds(150), maxExtraAttempts: 1), .validatingStatus()]
    /// )
    /// ```
    ///
    /// Only requests whose method is idempotent (``HTTPMethod/isIdempotent``: `GET`, `HEAD`, `OPTIONS`,
    /// `TRACE`, `PUT`, `DELETE`) and whose body can be sent twice (bytes, or a body Courier streams and makes afresh for each attempt, not a
    /// one-shot `httpBodyStream` or a form with a one-shot stream part) are hedged; the others
    /// pass straight through, and so does a request with an `Idempotency-Key` (or a key in the header that an
    /// ``idempotencyKey(header:methods:generate:)`` layer outside this one uses): a server that honours the key
    /// answers a second copy sent while the first is in progress with `409 Conflict`, which would win the race.
    /// Each extra attempt starts `delay` after the previous one, up to `maxExtraAttempts` of them.
    ///
    /// A hedged write (`PUT`, `DELETE`) reaches the server twice, at nearly the same time: the copy that
    /// answers first may have seen the other's effect (a `404` for a `DELETE` the original already did). Hedge
    /// writes only where the server answers a repeat as it answered the first; hedging is for reads.
    ///
    /// - The first attempt to **return** wins, whatever its status: put status validation inside this
    ///   layer if a `5xx` should count as a failure instead, so that a slower attempt can still win.
    /// - An attempt that **throws** does not end the call while others are in flight. When every attempt
    ///   started has failed, the error of the earliest attempt (the original request's) is thrown at once;
    ///   hedging does not retry (`retry` does).
    /// - The losers are cancelled, and the call returns once they have ended (structured concurrency), so
    ///   the transport sees each cancellation and nothing runs on behind the caller's back.
    /// - Cancelling the caller cancels every attempt and throws `CancellationError`.
    ///
    /// Hedging multiplies load on a slow upstream: pick `delay` near the latency's 95th percentile, so
    /// only the slowest few percent are hedged, and keep `maxExtraAttempts` small. Each hedged request runs
    /// in a task group with its attempt and a timer as children, which costs microseconds: worth it for
    /// calls that take milliseconds, not for in-memory ones.
    ///
    /// **Where it goes**: inside `retry` and a whole-call timeout; outside a concurrency limiter (each attempt
    /// then takes its own permit, so hedges respect the limit), a per-attempt timeout (each attempt has its
    /// own) and the other layers that should run once per attempt.
    ///
    /// - Parameters:
    ///   - delay: How long to wait for a response before sending another attempt; at least zero.
    ///   - maxExtraAttempts: The most attempts sent in addition to the first; at least zero.
    ///   - clock: The clock the delay is measured on; `ContinuousClock` by default.
    /// - Returns: The middleware, named `"hedging"`.
    public static func hedging<C: Clock>(
        after delay: Duration,
        maxExtraAttempts: Int = 1,
        clock: C = ContinuousClock()
    ) -> Middleware where C.Duration == Duration {
        precondition(delay >= .zero, "the hedging delay must not be negative")
        precondition(maxExtraAttempts >= 0, "maxExtraAttempts must not be negative")
        return Middleware(name: "hedging") { request, next in
            guard maxExtraAttempts > 0, Replay.isReplayable(request),
                HTTPMethod(rawValue: request.httpMethod ?? "GET").isIdempotent,
                !IdempotencyKeyMemory.isKeyed(request)
            else {
                return try await next(request)
            }
            return try await Hedging.race(request, next: next, delay: delay, extra: maxExtraAttempts, clock: clock)
        }
    }
}

/// The hedged call: attempts and delay timers as children of one task group.
private enum Hedging {
    enum Event: Sendable {
        case attempt(Int, Result<(Data, HTTPURLResponse), any Error>)
        case delayElapsed
        case timerCancelled
    }

    static func race<C: Clock>(
        _ request: URLRequest,
        next: Next,
        delay: Duration,
        extra: Int,
        clock: C
    ) async throws -> (Data, HTTPURLResponse) where C.Duration == Duration {
        let outcome = await withTaskGroup(of: Event.self) { group -> Result<(Data, HTTPURLResponse), any Error> in
            func startAttempt(_ attempt: Int) {
                // Each extra attempt gets its own body stream when the body is one Courier streams.
                let request = attempt == 0 ? request : Replay.fresh(request)
                group.addTask {
                    do {
                        return .attempt(attempt, .success(try await next(request)))
                    } catch {
                        return .attempt(attempt, .failure(error))
                    }
                }
            }
            func startTimer() {
                group.addTask {
                    do {
                        try await clock.sleep(for: delay)
                        return .delayElapsed
                    } catch {
                        return .timerCancelled
                    }
                }
            }
            startAttempt(0)
            startTimer()
            var extraStarted = 0
            var running = 1
            // The error of the earliest attempt that failed: the original request's, when it failed.
            var earliestFailure: (attempt: Int, error: any Error)?
            while let event = await group.next() {
                switch event {
                case .attempt(_, .success(let response)):
                    group.cancelAll()
                    return .success(response)
                case .attempt(let attempt, .failure(let error)):
                    running -= 1
                    if attempt < earliestFailure?.attempt ?? .max { earliestFailure = (attempt, error) }
                    if running == 0 {
                        group.cancelAll()
                        return .failure(earliestFailure!.error)
                    }
                case .delayElapsed:
                    guard !Task.isCancelled else { continue }
                    extraStarted += 1
                    running += 1
                    startAttempt(extraStarted)
                    if extraStarted < extra { startTimer() }
                case .timerCancelled:
                    continue
                }
            }
            // Not reached: the group always has an attempt running until one of the returns above.
            return .failure(earliestFailure?.error ?? CancellationError())
        }
        // A failure caused by the caller's cancellation is reported as such, never wrapped.
        if case .failure = outcome, Task.isCancelled { throw CancellationError() }
        return try outcome.get()
    }
}
