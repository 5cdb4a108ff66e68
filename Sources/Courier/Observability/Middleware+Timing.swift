// The public API mentions only `URLRequest`, which lives in FoundationNetworking on Linux.
#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

extension Middleware {
    /// Measures how long the rest of the chain takes for each request and reports it.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .timing { request, outcome, duration in
    ///             print(request.httpMethod ?? "GET", outcome, duration)
    ///         },
    ///         .retry(.default),
    ///     ]
    /// )
    /// ```
    ///
    /// The time runs from the moment the request enters this middleware until the rest of the chain
    /// returns or throws, so what is inside (retries, backoff, the transport) is included. Errors and
    /// cancellation are reported and then passed on unchanged. `report` runs in the request's task and
    /// delays the response while it runs: keep it short. For the attempts and where the time went, give it a
    /// closure that takes a fourth argument, a ``CallSummary``.
    ///
    /// - Parameters:
    ///   - clock: The clock that measures; `ContinuousClock` by default (tests pass a manual clock).
    ///   - report: Receives the request as it entered this middleware, how it ended, and how long it took.
    /// - Returns: A middleware named `"timing"`.
    public static func timing(
        clock: some Clock<Duration> = ContinuousClock(),
        _ report: @escaping @Sendable (URLRequest, RequestOutcome, Duration) -> Void
    ) -> Middleware {
        Middleware(name: "timing", waitsOnlyWithinDeadline: true) { request, next in
            let start = clock.now
            do {
                let (data, response) = try await next(request)
                report(request, .success(status: response.statusCode), start.duration(to: clock.now))
                return (data, response)
            } catch {
                report(
                    request,
                    RequestOutcome(error: Deadline.seenBelow(error, request: request)),
                    start.duration(to: clock.now)
                )
                throw error
            }
        }
    }

    /// Measures how long the rest of the chain takes for each request, and reports it with where the time went.
    ///
    /// ```swift
    /// .timing { request, outcome, duration, call in
    ///     metrics.record(duration, attempts: call.attempts)
    ///     if call.waitingForSlot > .milliseconds(100) { alerts.notify("queued \(call.waitingForSlot)") }
    /// }
    /// ```
    ///
    /// The same as the three-argument `timing(clock:_:)`, with a ``CallSummary`` besides: how many attempts the call made and how long it waited for a slot, for a token
    /// refresh, in backoff, for the response head and for the body, as the layers below measured it on `clock`.
    /// Keeping the summary costs an allocation and a task-local value per request, which the three-argument
    /// form does not pay.
    ///
    /// - Parameters:
    ///   - clock: The clock that measures; `ContinuousClock` by default (tests pass a manual clock).
    ///   - report: Receives the request as it entered this middleware, how it ended, how long it took, and the
    ///     call's summary.
    /// - Returns: A middleware named `"timing"`.
    public static func timing(
        clock: some Clock<Duration> = ContinuousClock(),
        _ report: @escaping @Sendable (URLRequest, RequestOutcome, Duration, CallSummary) -> Void
    ) -> Middleware {
        let stopwatch = CallRecord.stopwatch(on: clock)
        return Middleware(name: "timing", waitsOnlyWithinDeadline: true) { request, next in
            let start = clock.now
            let record = CallRecord(parent: CallRecord.current, stopwatch: stopwatch)
            do {
                let (data, response) = try await CallRecord.$current.withValue(record) { try await next(request) }
                report(request, .success(status: response.statusCode), start.duration(to: clock.now), record.snapshot)
                return (data, response)
            } catch {
                report(
                    request,
                    RequestOutcome(error: Deadline.seenBelow(error, request: request)),
                    start.duration(to: clock.now),
                    record.snapshot
                )
                throw error
            }
        }
    }
}
