#if Metrics
import Metrics

extension ClientMetrics {
    /// Reports a ``RequestCounter``'s requests in flight as the gauge `courier.requests.in_flight`, until the
    /// counter is released or the calling task is cancelled.
    ///
    /// ```swift
    /// let counter = RequestCounter()
    /// let metrics = ClientMetrics()
    /// let client = Client(baseURL: base, middleware: [.counting(counter), .metrics(metrics)])
    /// let reporting = Task { await metrics.reportInFlight(of: counter) }   // or run it in a service group
    /// // …
    /// reporting.cancel()
    /// ```
    ///
    /// The gauge follows the counter's ``RequestCounter/changes(bufferingPolicy:)`` stream, keeping only the
    /// newest value when the reporting task falls behind, so a burst of requests costs the request path
    /// nothing extra. `http.client.active_requests`, which the metrics middleware keeps by method and host,
    /// tells the same story per series; this gauge is the counter's own total, the number that
    /// ``RequestCounter/waitUntilIdle()`` waits on.
    ///
    /// - Parameters:
    ///   - counter: The counter whose in-flight total the gauge shows.
    ///   - dimensions: Dimensions for the gauge, for example `[("client", "billing")]` when several
    ///     counters report; none by default.
    public func reportInFlight(of counter: RequestCounter, dimensions: [(String, String)] = []) async {
        let gauge = Gauge(label: Label.inFlight, dimensions: dimensions, factory: factory ?? MetricsSystem.factory)
        for await change in counter.changes(bufferingPolicy: .bufferingNewest(1)) {
            gauge.record(change.snapshot.inFlight)
        }
    }
}
#endif
