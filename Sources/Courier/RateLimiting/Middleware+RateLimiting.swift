import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Paces requests by the rate limits the server announces, so that they wait for the next window instead
    /// of being sent into a `429`.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: baseURL,
    ///     middleware: [
    ///         .timeout(.seconds(30)),          // the whole call: bounds the wait for a window too
    ///         .retry(.default),
    ///         .authenticating(with: auth),
    ///         .rateLimiting(RateLimitPolicy(maximumWait: .seconds(20))),
    ///         .timeout(.seconds(5)),           // each attempt: time spent waiting does not count
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// See ``RateLimiter`` for the fields it reads and how it paces, and <doc:RateLimiting> for a guide.
    ///
    /// **Where it goes**: inside `retry`, so that each attempt takes a slot and a retry after a `429` waits
    /// for the window instead of going straight into another `429`; inside `authenticating`, so that a
    /// refresh-and-restart is counted as the second request it is and a per-credential partition can read
    /// the credential; outside the per-attempt timeout, so waiting for a window does not eat an attempt's
    /// time. It works with `validatingStatus` on either side (it reads a `429` from the error too), and with
    /// `followingRedirects` inside it: a response from another host than the one the request was sent to (the
    /// last hop of a redirect) counts as one that said nothing about the rate limit, since that host's limit is
    /// not this partition's.
    ///
    /// - Parameters:
    ///   - policy: How to pace; the defaults follow the server, wait at most 60 seconds and partition by host.
    ///   - clock: The clock windows are measured on; `ContinuousClock` by default, a `ManualClock` in tests.
    /// - Returns: The middleware, named `"rateLimiting"`.
    public static func rateLimiting<C: Clock<Duration>>(
        _ policy: RateLimitPolicy = RateLimitPolicy(),
        clock: C = ContinuousClock()
    ) -> Middleware {
        .rateLimiting(RateLimiter(policy, clock: clock))
    }

    /// Rate limiting with a limiter you keep, to read its state or share one quota between clients.
    ///
    /// ```swift
    /// let limiter = RateLimiter(RateLimitPolicy())
    /// let a = Client(baseURL: base, middleware: [.rateLimiting(limiter)])
    /// let b = Client(baseURL: base, middleware: [.rateLimiting(limiter)])   // one quota for both
    /// ```
    ///
    /// - Returns: The middleware, named `"rateLimiting"`.
    public static func rateLimiting(_ limiter: RateLimiter) -> Middleware {
        Middleware(name: "rateLimiting") { request, next in
            // A request to an unlimited partition goes without an await, a clock read or a deadline lookup.
            // With a shared limit, the maximum wait counts from here: the limiter's wait and the shared one.
            let arrival = limiter.shared?.now()
            var lease: RateLimiter.Lease
            switch limiter.admit(request) {
            case .lease(let atOnce): lease = atOnce
            case .acquire(let partition):
                lease = try await limiter.acquire(request, partition: partition, since: arrival)
            }
            // With a shared limit, the request also takes a slot of the fleet's window (SharedQuota). While it
            // waits for the fleet's next window, it holds no slot the limiter paces: it gives it back and asks again.
            // When its client window ended while it waited for a reservation, its slot there counts in no window
            // it could still be sent in: it gives it back (to no one) and takes one of the current window.
            if let shared = limiter.shared {
                taking: while true {
                    let taken: SharedQuota.Taken
                    do {
                        taken = try await shared.take(
                            request,
                            partition: lease.partition,
                            arrival: arrival,
                            paced: limiter.paces(lease),
                            heldSlotEnded: { limiter.outlivedClientWindow(lease) }
                        )
                    } catch {
                        limiter.returnUnused(lease)
                        throw error
                    }
                    switch taken {
                    case .slot:
                        break taking
                    case .nextWindow(let opening):
                        limiter.returnUnused(lease)
                        try await shared.sleep(until: opening)
                    case .heldSlotEnded:
                        limiter.returnUnused(lease)
                    }
                    lease = try await limiter.acquire(request, partition: lease.partition, since: arrival)
                }
            }
            defer { limiter.shared?.finished(lease.partition) }
            let result: (Data, HTTPURLResponse)
            do {
                result = try await next(request)
            } catch {
                // A status validation layer inside turns a 429 into an error that still carries the response.
                let response = (error as? CourierError)?.response
                if let quota = limiter.complete(lease, request: request, response: response) {
                    await limiter.record(quota, for: lease.partition)
                }
                throw error
            }
            if let quota = limiter.complete(lease, request: request, response: result.1) {
                await limiter.record(quota, for: lease.partition)
            }
            return result
        }
    }
}
