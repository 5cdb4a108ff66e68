import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Sends a request again when an attempt fails in a way worth retrying, as `policy` says.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .timeout(.seconds(10)),          // bounds the whole call, backoff included
    ///         .idempotencyKey(),               // one key per call, so POSTs can be retried safely
    ///         .retry(.default),
    ///         .timeout(.seconds(2)),           // each attempt
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// The retry is a loop in the caller's task that calls the rest of the chain again after a backoff
    /// sleep on `clock`. Each attempt:
    /// - a response with a status in ``RetryPolicy/retryableStatuses`` is retried; so is a
    ///   ``CourierError/Code/unacceptableStatus`` error with such a status, thrown by a validation layer
    ///   placed inside the retry;
    /// - an error for which ``RetryPolicy/isRetryable`` is true (transient transport failures and
    ///   per-attempt timeouts, by default) is retried;
    /// - anything else is returned or thrown at once.
    ///
    /// A retry happens only if all of these hold; otherwise the last response is returned as it is (a
    /// status validation layer outside the retry then reports it) or the last error is rethrown — a
    /// ``CourierError`` with its code, status, middleware and message as they were and the call's story added:
    /// ``CourierError/attempts`` and ``CourierError/elapsed`` (from the first attempt's start), which its
    /// description tells as `after 3 attempts over 6.4 s: …`:
    /// - the task is not cancelled (`CancellationError` is never retried; cancelling during a backoff
    ///   throws `CancellationError` at once and sends nothing more);
    /// - attempts are left (``RetryPolicy/maximumAttempts``);
    /// - the method is idempotent, or the request has an ``RetryPolicy/idempotencyKeyHeader`` header, or
    ///   the policy ``RetryPolicy/retriesNonIdempotentRequests``;
    /// - a `Retry-After` on a 429 or 503 is at most ``RetryPolicy/maximumRetryAfter``;
    /// - the delay ends before ``Deadline/current`` (set by an enclosing timeout);
    /// - the ``RetryPolicy/budget`` has a token.
    ///
    /// The layers inside see the attempt number in ``RetryContext/current``.
    ///
    /// - Parameters:
    ///   - policy: When and how to retry; ``RetryPolicy/default`` gives 3 attempts.
    ///   - clock: The clock backoff sleeps on; `ContinuousClock` by default, a `ManualClock` in tests.
    /// - Returns: The middleware, named `"retry"`.
    public static func retry<C: Clock<Duration>>(
        _ policy: RetryPolicy = .default,
        clock: C = ContinuousClock()
    ) -> Middleware {
        precondition(
            policy.maximumAttempts >= 1,
            "a retry policy needs at least 1 attempt (got \(policy.maximumAttempts))"
        )
        if let clock = clock as? ContinuousClock {
            // The default clock gets a closure of its own, which calls a copy of the retry loop specialized for
            // it: from a generic context the loop would look up generic metadata and conformances on every
            // request (see Benchmarks/RESULTS.md). Its backoff ends before the deadline, which is in real time too.
            let retrier = Retrier(policy: policy, clock: clock)
            return Middleware(name: "retry", waitsOnlyWithinDeadline: true) { request, next in
                try await retrier.send(request, next: next)
            }
        }
        let retrier = Retrier(policy: policy, clock: clock)
        // Its backoff ends before the deadline, as long as it sleeps in real time like the deadline it reads.
        let sleepsInRealTime = clock is SuspendingClock
        return Middleware(name: "retry", waitsOnlyWithinDeadline: sleepsInRealTime) { request, next in
            try await retrier.send(request, next: next)
        }
    }
}
