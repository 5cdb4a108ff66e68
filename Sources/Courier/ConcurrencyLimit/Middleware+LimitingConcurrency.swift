extension Middleware {
    /// Bounds how many requests pass this point at once, overall and per host; the others wait in a
    /// FIFO-fair, cancellation-aware queue.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: baseURL,
    ///     middleware: [
    ///         .retry(.default),
    ///         .limitingConcurrency(maxInFlight: 64, perHost: 8),
    ///         .timeout(.seconds(2)),          // per attempt: time spent queued does not count
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// A request holds its permit until the rest of the chain returns or throws; a streamed call (`stream`,
    /// `events`, `download`), until its head has arrived: the body that follows holds none, so that a caller
    /// that opens a second stream before reading the first never waits for itself. A cancelled waiter leaves
    /// the queue at once (`CancellationError`) and never takes or leaks a permit. See ``ConcurrencyLimiter``
    /// for the details, and to share one limit between several clients.
    ///
    /// **Where it goes**: inside `retry` (a request waiting out its backoff holds no permit) and outside a
    /// per-attempt timeout (time spent in the queue does not eat the attempt's budget); a whole-call timeout
    /// outside bounds the wait.
    ///
    /// - Parameters:
    ///   - maxInFlight: The most requests in flight at once overall (`nil`: no overall limit); at least 1.
    ///   - perHost: The most requests in flight at once to one host and port (`nil`: no per-host limit).
    ///   - maxQueued: The most requests that may wait in one queue; one more fails at once with
    ///     ``CourierError/Code/concurrencyLimited``. `nil` (the default): no limit.
    /// - Returns: The middleware, named `"limitingConcurrency"`.
    public static func limitingConcurrency(
        maxInFlight: Int? = nil,
        perHost: Int? = nil,
        maxQueued: Int? = nil
    ) -> Middleware {
        .limitingConcurrency(ConcurrencyLimiter(maxInFlight: maxInFlight, perHost: perHost, maxQueued: maxQueued))
    }

    /// Bounds how many requests pass this point at once with a limiter that can be shared between clients.
    ///
    /// ```swift
    /// let limiter = ConcurrencyLimiter(maxInFlight: 32)
    /// let a = Client(baseURL: urlA, middleware: [.limitingConcurrency(limiter)])
    /// let b = Client(baseURL: urlB, middleware: [.limitingConcurrency(limiter)])
    /// ```
    ///
    /// - Parameter limiter: The limiter; its limits apply to every chain it is part of together.
    /// - Returns: The middleware, named `"limitingConcurrency"`.
    public static func limitingConcurrency(_ limiter: ConcurrencyLimiter) -> Middleware {
        Middleware(name: "limitingConcurrency") { request, next in
            let lease = try await limiter.acquire(for: request)
            defer { limiter.release(lease) }
            return try await next(request)
        }
    }
}
