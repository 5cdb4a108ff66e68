extension Middleware {
    /// A private HTTP cache (RFC 9111): fresh `GET` and `HEAD` responses answer without a request, stale ones
    /// are revalidated with `If-None-Match`/`If-Modified-Since`, and unsafe requests invalidate what they
    /// change. See ``HTTPCache`` for the rules. A streamed call
    /// (``Client/stream(_:idleTimeout:totalTimeout:clock:)-(URLRequest,_,_,_)``) passes through: its body goes
    /// to its caller as it arrives and is neither stored nor answered from the cache.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.retry(.default), .authenticating(token: apiToken), .caching(), .validatingStatus()]
    /// )
    /// ```
    ///
    /// **Where to put it**: inside (after) `.authenticating`, so that each response is filed under the
    /// credential that fetched it; inside `.retry`, so that a retried attempt can be answered or
    /// revalidated; outside a per-attempt `.timeout`, status validation and `.followingRedirects`.
    ///
    /// - Parameters:
    ///   - store: Where responses are kept; a new ``InMemoryHTTPCacheStore`` by default.
    ///   - onEvent: Told what the cache does (see ``CacheEvent``).
    /// - Returns: A middleware named `"caching"`.
    public static func caching(
        store: any HTTPCacheStore = InMemoryHTTPCacheStore(),
        onEvent: (@Sendable (CacheEvent) -> Void)? = nil
    ) -> Middleware {
        .caching(HTTPCache(store: store, onEvent: onEvent))
    }

    /// A private HTTP cache, with its state in `cache` (to inject a clock, or to share one cache between
    /// clients).
    ///
    /// - Returns: A middleware named `"caching"`.
    public static func caching(_ cache: HTTPCache) -> Middleware {
        Middleware(name: "caching") { request, next in
            try await cache.send(request, next: next)
        }
    }
}
