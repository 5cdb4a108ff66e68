extension Middleware {
    /// Counts the requests that pass through it in `counter`: in flight, peak, started, and how each ended.
    ///
    /// ```swift
    /// let counter = RequestCounter()
    /// let client = Client(baseURL: base, middleware: [.counting(counter), .retry(.default), .validatingStatus()])
    /// // …
    /// await counter.waitUntilIdle()
    /// ```
    ///
    /// Every request is counted as started once and ends exactly once, on every path: a response
    /// (succeeded), a thrown error or a timeout (failed), or cancellation of the caller's task before or
    /// after the transport started (cancelled). A request that a middleware inside this one retries or
    /// restarts (retry, token refresh, redirects) is still one request. A streamed call
    /// (``Client/stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)``) is in flight until its body
    /// ends: succeeded when read to its end, failed when reading it failed (a lost connection, an idle timeout),
    /// cancelled when the reader stopped it. Put it **first** (outermost) so
    /// that it sees everything the caller sees; nearer the transport it counts attempts instead.
    ///
    /// The per-request cost is two short lock sections; there is no actor hop.
    ///
    /// - Returns: The counting middleware, named `"counting"`.
    public static func counting(_ counter: RequestCounter) -> Middleware {
        Middleware(name: "counting", waitsOnlyWithinDeadline: true) { request, next in
            counter.recordStart()
            do {
                let result = try await next(request)
                // A streamed call (its head has an empty body) is in flight until its body ends.
                if result.0.isEmpty, let call = StreamCall.current,
                    call.whenBodyEnds(of: result.1, { counter.recordEnd(RequestCounter.Outcome(bodyEnding: $0)) })
                {
                    return result
                }
                counter.recordEnd(.succeeded)
                return result
            } catch {
                // A timeout above that cancelled the request at its deadline ended it in a failure (`timedOut`).
                counter.recordEnd(Deadline.isCallerCancellation(error) ? .cancelled : .failed)
                throw error
            }
        }
    }
}
