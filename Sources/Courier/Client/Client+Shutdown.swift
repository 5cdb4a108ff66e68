extension Client {
    /// Whether the client has begun shutting down: new requests fail with
    /// ``CourierError/Code/clientShutDown``.
    public nonisolated var isShutDown: Bool {
        lifecycle.isClosed
    }

    /// Shuts the client down gracefully: refuses new requests, then waits for the requests in flight.
    ///
    /// From the moment this is called, every new `send` fails with ``CourierError/Code/clientShutDown``
    /// (nothing is sent). The requests already in flight go on; this method returns when all of them have
    /// ended. With a `gracePeriod`, the requests still running when it ends are cancelled, if they were sent
    /// while ``Configuration/isCancellableOnShutdown`` was on: their callers get ``CourierError/Code/clientShutDown``
    /// (their own tasks are not cancelled), and this method still waits for them to end. Requests that are
    /// not cancellable are waited for however long they take.
    ///
    /// ```swift
    /// await client.shutdown()                             // wait for everything in flight
    /// await client.shutdown(gracePeriod: .seconds(10))    // …but at most about 10 s
    /// ```
    ///
    /// Calling it again, or concurrently, is fine: every call returns once the client is idle. If the task
    /// calling it is cancelled, it stops waiting and returns at once (the client stays shut down, and
    /// nothing is cancelled).
    ///
    /// A client cannot be restarted; make a new one.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long to wait before cancelling the requests still in flight, or `nil` to wait as
    ///     long as they take.
    ///   - clock: The clock that measures the grace period.
    public func shutdown(gracePeriod: Duration? = nil, clock: some Clock<Duration> = ContinuousClock()) async {
        let lifecycle = self.lifecycle
        lifecycle.close()
        guard let gracePeriod else {
            await lifecycle.waitUntilIdle()
            return
        }
        let idleInTime = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await lifecycle.waitUntilIdle()
                return true
            }
            group.addTask {
                do {
                    try await clock.sleep(for: gracePeriod)
                    return false
                } catch {
                    return true
                }
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        guard !idleInTime, !Task.isCancelled else { return }
        lifecycle.cancelInFlight()
        await lifecycle.waitUntilIdle()
    }
}
