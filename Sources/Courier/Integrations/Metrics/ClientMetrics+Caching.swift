#if Metrics
import Metrics

extension ClientMetrics.Label {
    /// `http.client.cache.events`: a counter of an ``HTTPCache``'s events, by `cache.event` (the
    /// ``CacheEvent/Kind`` raw value: `hit`, `miss`, `revalidated`, `stored`, `invalidated`, `staleIfError`,
    /// `storeFailed`) and `http.request.method`. Fed by ``ClientMetrics/recordCacheEvent(_:)``.
    public static let cacheEvents = "http.client.cache.events"
}

extension ClientMetrics.Dimension {
    /// `cache.event`: the kind of a cache event.
    public static let cacheEvent = "cache.event"
}

extension ClientMetrics {
    /// Counts one cache event in `http.client.cache.events`; pass it as the cache's `onEvent`.
    ///
    /// ```swift
    /// let metrics = ClientMetrics()
    /// let cache = HTTPCache(onEvent: metrics.recordCacheEvent)
    /// let client = Client(baseURL: base, middleware: [.metrics(metrics), .authenticating(token: token), .caching(cache)])
    /// ```
    ///
    /// The hit ratio is `hit / (hit + miss + revalidated)`; a `revalidated` request cost the server a `304`.
    /// The series are few (seven kinds, normalized methods), so the counter is made from the factory on each
    /// event rather than kept.
    public func recordCacheEvent(_ event: CacheEvent) {
        let dimensions = [
            (Dimension.cacheEvent, event.kind.rawValue),
            (Dimension.method, HTTPAttributes.normalizedMethod(event.method)),
        ]
        Counter(label: Label.cacheEvents, dimensions: dimensions, factory: factory ?? MetricsSystem.factory)
            .increment()
    }
}
#endif
