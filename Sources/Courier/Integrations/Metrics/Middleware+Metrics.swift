#if Metrics
import Foundation
public import Metrics

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Records every request that passes through it in `metrics` (trait `Metrics`).
    ///
    /// ```swift
    /// let metrics = ClientMetrics(factory: prometheus)
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.metrics(metrics), .retry(.default), .validatingStatus()]
    /// )
    /// ```
    ///
    /// A request counts once in `http.client.requests` and `http.client.request.duration`, whatever
    /// happens to it: a response, an error (also in `http.client.request.errors`) or cancellation. It is in
    /// `http.client.active_requests` while it runs. See ``ClientMetrics`` for every metric and dimension.
    ///
    /// **Where to put it.** Outermost (or just inside `.counting`), it sees each call once and measures
    /// what the caller waits for, retries and backoff included; put `.validatingStatus()` inside it for bad
    /// statuses to count as errors. Inside `.retry`, it measures each attempt instead. Errors and
    /// cancellation pass through unchanged.
    ///
    /// - Parameters:
    ///   - metrics: The metrics that record each request.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    /// - Returns: A middleware named `"metrics"`.
    public static func metrics(
        _ metrics: ClientMetrics,
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        Middleware(name: "metrics") { request, next in
            let (key, active) = metrics.begin(request)
            active.increment()
            let start = clock.now
            do {
                let (data, response) = try await next(request)
                active.decrement()
                metrics.recordResponse(key, statusCode: response.statusCode, duration: start.duration(to: clock.now))
                return (data, response)
            } catch {
                active.decrement()
                metrics.recordFailure(key, error: error, duration: start.duration(to: clock.now))
                throw error
            }
        }
    }

    /// Records every request that passes through it with swift-metrics (trait `Metrics`).
    ///
    /// ```swift
    /// let client = Client(baseURL: base, middleware: [.metrics(), .validatingStatus()])
    /// ```
    ///
    /// The same as ``metrics(_:clock:)`` with a new ``ClientMetrics``; make the ``ClientMetrics`` yourself
    /// to also count retries and refreshes with it.
    ///
    /// - Parameters:
    ///   - factory: The swift-metrics backend; `nil` (the default) uses `MetricsSystem.factory`.
    ///   - options: What to record.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    /// - Returns: A middleware named `"metrics"`.
    public static func metrics(
        factory: (any MetricsFactory)? = nil,
        options: ClientMetrics.Options = ClientMetrics.Options(),
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        metrics(ClientMetrics(factory: factory, options: options), clock: clock)
    }
}
#endif
