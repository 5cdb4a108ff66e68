#if Metrics
import Metrics

extension ClientMetrics.Label {
    /// `courier.rate_limit.wait.duration`: a timer of how long requests waited for a rate-limit slot.
    public static let rateLimitWaits = "courier.rate_limit.wait.duration"
    /// `courier.rate_limit.rejections`: a counter of requests the rate limiter refused, by `reason`
    /// (`queueFull`, `waitTooLong`, `deadline`).
    public static let rateLimitRejections = "courier.rate_limit.rejections"
    /// `courier.rate_limit.throttled`: a counter of `429` and `503` answers, by `http.response.status_code`.
    public static let rateLimitThrottled = "courier.rate_limit.throttled"
    /// `courier.rate_limit.remaining`: a gauge of the requests left in a partition's window, by
    /// `rate_limit.partition`.
    public static let rateLimitRemaining = "courier.rate_limit.remaining"
    /// `courier.rate_limit.store_failures`: a counter of reservations of a shared limit that the
    /// ``RateLimitStore`` failed or did not answer in time.
    public static let rateLimitStoreFailures = "courier.rate_limit.store_failures"
}

extension ClientMetrics {
    /// Records a rate-limit event: waits in `courier.rate_limit.wait.duration`, refusals in
    /// `courier.rate_limit.rejections`, `429`/`503` answers in `courier.rate_limit.throttled`, what is left
    /// of a quota in the gauge `courier.rate_limit.remaining`, and the shared store's failures in
    /// `courier.rate_limit.store_failures`.
    ///
    /// Hook it into the policy, so that every event is recorded once:
    ///
    /// ```swift
    /// let metrics = ClientMetrics()
    /// var policy = RateLimitPolicy()
    /// policy.onEvent = { event in metrics.recordRateLimit(event) }
    /// let client = Client(baseURL: base, middleware: [.metrics(metrics), .retry(.default), .rateLimiting(policy)])
    /// ```
    ///
    /// **Cardinality.** Only the gauge carries the partition (`rate_limit.partition`): by default `host:port`,
    /// so as many series as hosts. A partition function of your own that returns many keys (one per user)
    /// makes as many series; leave the gauge out then by recording only the other events.
    public func recordRateLimit(_ event: RateLimitEvent) {
        let factory = self.factory ?? MetricsSystem.factory
        switch event {
        case .waited(_, let duration):
            Timer(label: Label.rateLimitWaits, dimensions: [], preferredDisplayUnit: .seconds, factory: factory)
                .record(duration: duration)
        case .rejected(_, let reason):
            Counter(label: Label.rateLimitRejections, dimensions: [("reason", reason.description)], factory: factory)
                .increment()
        case .throttled(_, let status, _):
            Counter(
                label: Label.rateLimitThrottled,
                dimensions: [("http.response.status_code", String(status))],
                factory: factory
            ).increment()
        case .updated(_, _, let remaining, _):
            Gauge(
                label: Label.rateLimitRemaining,
                dimensions: [("rate_limit.partition", event.printablePartition)],
                factory: factory
            )
            .record(remaining)
        case .storeFailed:
            Counter(label: Label.rateLimitStoreFailures, dimensions: [], factory: factory).increment()
        }
    }
}
#endif
