import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Fails a call that takes longer than `duration`, cancelling the work still in flight.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .timeout(.seconds(10)),              // the whole call, retries included
    ///         .retry(.default),
    ///         .timeout(.seconds(2)),               // each attempt
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// The rest of the chain runs as a child task. When the deadline comes first, the child task is
    /// cancelled (the transport sees the cancellation and stops), and the call throws a ``CourierError``
    /// with code ``CourierError/Code/timedOut`` and ``CourierError/timeout`` set to the duration. The error says
    /// which timeout it was (``CourierError/timeoutScope``: ``CourierError/TimeoutScope/attempt`` inside a
    /// retry, ``CourierError/TimeoutScope/call`` elsewhere) and how long what it bounds ran
    /// (``CourierError/elapsed``); a whole-call timeout's error also carries the attempts the call made
    /// (``CourierError/attempts``): `after 3 attempts over 10.0 s: the whole-call timeout of 10.0 seconds passed`. Because the
    /// work is structured, the error is thrown once the cancelled work has ended: a transport that ignores
    /// cancellation delays it. A response that arrives before the deadline is returned as it is, and so is an
    /// error, with one exception: a nearer deadline's `timedOut` (an inner timeout's) that reaches this timeout
    /// once its own deadline has passed is reported as this timeout's, even when its timer has not run yet on a
    /// busy machine. So a retry inside a whole-call timeout that finds no time left after an attempt timed out
    /// reports the whole call's timeout, whichever of the two a busy machine ran first. If the caller's task is
    /// cancelled, the call throws `CancellationError`, not a timeout.
    ///
    /// **Deadlines.** The outermost timeout sets ``Deadline/current`` for the layers below it. An inner
    /// timeout waits for the smaller of its own duration and the time left; when the outer deadline is the
    /// nearer one, the error reports the outer timeout's duration. ``Middleware/retry(_:clock:)`` never
    /// sleeps past the deadline.
    ///
    /// **Placement.** Outside ``Middleware/retry(_:clock:)`` a timeout bounds the whole call, backoff
    /// included; inside it, each attempt (a per-attempt timeout is retryable). See <doc:Resilience>.
    ///
    /// **Cost.** The work starts at once in the caller's thread (an immediate child task, on platforms that
    /// have it); its deadline is registered only if the work suspends. A call that completes without
    /// suspending (an in-memory transport, a cache) pays for one child task and nothing else. With the default
    /// `ContinuousClock`, one middleware enforces the deadlines of all its requests with a single task that
    /// sleeps until the earliest one, so a request that suspends adds an entry to a queue rather than a timer
    /// of its own; that task ends once the middleware has been idle for one `duration`. Another clock (a
    /// `ManualClock` in tests) gets a timer per request. Over `AsyncHTTPClientTransport`, which enforces the
    /// call's deadline itself, a timeout whose lower layers are all built-in layers that wait only within the
    /// deadline runs them without a child task, and its shared timer cancels a body still arriving at the
    /// deadline (see <doc:Resilience>).
    ///
    /// The timeout never relies on `URLRequest.timeoutInterval`, which is truncated to whole seconds on
    /// Linux.
    ///
    /// - Parameters:
    ///   - duration: The longest the rest of the chain may take; must be greater than zero.
    ///   - clock: The clock that measures it; `ContinuousClock` by default, a `ManualClock` in tests.
    /// - Returns: The middleware, named `"timeout"`.
    public static func timeout<C: Clock<Duration>>(
        _ duration: Duration,
        clock: C = ContinuousClock()
    ) -> Middleware {
        precondition(duration > .zero, "a timeout must be longer than zero (got \(duration))")
        if let clock = clock as? ContinuousClock {
            // The default clock gets a closure of its own, which calls a copy of the runner specialized
            // for it: from a generic context the runner would look up generic metadata and conformances
            // on every request (about a third of the layer's cost; see Benchmarks/RESULTS.md).
            // It also enforces its deadlines with one driver task for the whole middleware instead of a timer
            // per request (see DeadlineTimer).
            let timer = DeadlineTimer(clock: clock)
            return Middleware(name: "timeout", waitsOnlyWithinDeadline: true) { request, next in
                try await TimeoutRunner.run(duration, timer: timer, request: request, next: next)
            }
        }
        return Middleware(name: "timeout", waitsOnlyWithinDeadline: true) { request, next in
            try await TimeoutRunner.run(duration, clock: clock, request: request, next: next)
        }
    }

    /// A timeout whose deadlines `timer` enforces: what `timeout(_:clock:)` builds for `ContinuousClock`, and
    /// what the tests build over a `ManualClock`.
    static func timeout<C: Clock<Duration>>(_ duration: Duration, timer: DeadlineTimer<C>) -> Middleware {
        precondition(duration > .zero, "a timeout must be longer than zero (got \(duration))")
        return Middleware(name: "timeout", waitsOnlyWithinDeadline: true) { request, next in
            try await TimeoutRunner.run(duration, timer: timer, request: request, next: next)
        }
    }
}
