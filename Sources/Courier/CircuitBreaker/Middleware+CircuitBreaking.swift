// `HTTPURLResponse` lives in FoundationNetworking on Linux and in Foundation elsewhere.
#if canImport(FoundationNetworking)
public import FoundationNetworking
#else
public import Foundation
#endif

extension Middleware {
    /// Fails requests fast with ``CourierError/Code/circuitOpen`` while their host is failing, and lets one
    /// probe through after a cooldown; a circuit per host.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: baseURL,
    ///     middleware: [
    ///         .timeout(.seconds(10)),
    ///         .retry(.default),
    ///         .circuitBreaker(failureThreshold: 5, cooldown: .seconds(30)),
    ///         .timeout(.seconds(2)),   // per attempt: a timed-out attempt counts as a failure
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// See ``CircuitBreaker`` for the states. By default, transport errors, timeouts and `5xx` responses are
    /// failures.
    ///
    /// **Where it goes**: inside `retry`, so each attempt counts (and a retry policy that does not retry
    /// ``CourierError/Code/circuitOpen`` stops at once), and outside the per-attempt timeout, so a timed-out
    /// attempt is seen as a failure rather than as a cancellation. A whole-call timeout above it that passes while a
    /// request is in flight counts as that host's failure too (`timedOut`), whatever layers sit between; a caller
    /// that goes away counts neither way.
    ///
    /// - Parameters:
    ///   - failureThreshold: How many consecutive failures open a host's circuit; at least 1.
    ///   - cooldown: How long a circuit stays open before a probe is let through.
    ///   - isFailure: Whether an outcome counts as a failure;
    ///     ``CircuitBreaker/Policy/isTransportOrServerFailure(_:)`` by default.
    ///   - clock: The clock cooldowns are measured on; `ContinuousClock` by default.
    /// - Returns: The middleware, named `"circuitBreaker"`.
    public static func circuitBreaker<C: Clock>(
        failureThreshold: Int = 5,
        cooldown: Duration = .seconds(30),
        isFailure: @escaping @Sendable (Result<HTTPURLResponse, any Error>) -> Bool = CircuitBreaker.Policy
            .isTransportOrServerFailure,
        clock: C = ContinuousClock()
    ) -> Middleware where C.Duration == Duration {
        let policy = CircuitBreaker.Policy(failureThreshold: failureThreshold, cooldown: cooldown, isFailure: isFailure)
        return .circuitBreaker(CircuitBreaker(policy, clock: clock))
    }

    /// Circuit breaking with a breaker you keep, to read its state or share it between clients.
    ///
    /// ```swift
    /// let breaker = CircuitBreaker(.init(failureThreshold: 3, cooldown: .seconds(5)))
    /// let client = Client(baseURL: baseURL, middleware: [.circuitBreaker(breaker)])
    /// if breaker.state(for: baseURL) == .open { … }
    /// ```
    ///
    /// - Returns: The middleware, named `"circuitBreaker"`.
    public static func circuitBreaker(_ breaker: CircuitBreaker) -> Middleware {
        Middleware(name: "circuitBreaker", waitsOnlyWithinDeadline: true) { request, next in
            let ticket = try breaker.admit(request)
            do {
                let result = try await next(request)
                breaker.record(breaker.outcome(of: .success(result.1), for: request), for: ticket)
                return result
            } catch {
                breaker.record(breaker.outcome(of: .failure(error), for: request), for: ticket)
                throw error
            }
        }
    }
}
