extension Middleware {
    /// Sends identical concurrent `GET` and `HEAD` requests once and gives every caller the same response
    /// or the same error (single-flight).
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: baseURL,
    ///     middleware: [.retry(.default), .authenticating(with: auth), .coalescing(), .validatingStatus()]
    /// )
    /// // 1,000 concurrent `GET /config` with the same credentials: one request on the wire.
    /// ```
    ///
    /// Requests are identical when their method, URL and header fields match, except for per-request tracing ids;
    /// credential headers (`Authorization`, `Cookie`, `X-API-Key`, any of ``CredentialHeaders``) are always part of
    /// the comparison, even when named in `ignoredHeaders`, so callers with different credentials never share a
    /// response. A response that Varies on a tracing id the key leaves out, or on anything (`Vary: *`), is not
    /// shared either: each caller that joined sends its own. `POST` and the other methods, and requests with a body,
    /// are never coalesced, nor is a streamed call
    /// (``Client/stream(_:idleTimeout:totalTimeout:clock:)-(URLRequest,_,_,_)``: its body has one reader). See
    /// ``RequestCoalescer`` for the exact key and for cancellation: a cancelled caller stops waiting at once, and the
    /// shared call is cancelled only when every caller has gone. Likewise a caller's deadline (a whole-call timeout
    /// outside) ends only its own wait: the shared call runs under no caller's ``Deadline``.
    ///
    /// **Where it goes**: inside `authenticating` (the key then includes the credential actually sent), and
    /// outside the per-attempt layers it should share (timeout, status validation, the transport). Retry
    /// outside it means each caller retries on its own and may join a fresh shared call. Listed outside an
    /// authenticating layer, it would give every caller the first one's response (another tenant's, when the
    /// token depends on who calls): the call then fails with ``CourierError/Code/invalidRequest`` for every
    /// caller, and no response of it is shared.
    ///
    /// - Parameter ignoredHeaders: Header names left out of the coalescing key (case-insensitive);
    ///   ``RequestCoalescer/defaultIgnoredHeaders`` by default.
    /// - Returns: The middleware, named `"coalescing"`.
    public static func coalescing(
        ignoringHeaders ignoredHeaders: Set<String> = RequestCoalescer.defaultIgnoredHeaders
    ) -> Middleware {
        .coalescing(RequestCoalescer(ignoringHeaders: ignoredHeaders))
    }

    /// Single-flight with a coalescer you keep, for example to read its counts.
    ///
    /// ```swift
    /// let coalescer = RequestCoalescer()
    /// let client = Client(baseURL: baseURL, middleware: [.coalescing(coalescer)])
    /// print(coalescer.sharedCalls, coalescer.waitingCallers)
    /// ```
    ///
    /// - Returns: The middleware, named `"coalescing"`.
    public static func coalescing(_ coalescer: RequestCoalescer) -> Middleware {
        Middleware(name: "coalescing") { request, next in
            // A streamed body has one reader: a streamed call is never shared.
            if StreamCall.current != nil { return try await next(request) }
            return try await coalescer.send(request, next: next)
        }
    }
}
