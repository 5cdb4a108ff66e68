#if ServiceLifecycle
public import ServiceLifecycle

/// A ``Client`` is a swift-service-lifecycle `Service` (trait `ServiceLifecycle`): put it in your
/// `ServiceGroup`, and a graceful shutdown (SIGTERM, say) drains its requests in flight.
///
/// ```swift
/// let client = Client(baseURL: upstream, transport: AsyncHTTPClientTransport(), middleware: [...])
/// let app = Application(router: router)              // a Hummingbird server whose handlers use the client
/// let group = ServiceGroup(
///     services: [client, app],                       // shut down in reverse: the server first, then the client
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()
/// ```
///
/// The client itself is the service, as a `PostgresClient` (postgres-nio) or a Hummingbird `Application`
/// is: there is nothing to wrap, and the group's own settings bound the drain.
/// - ``run()`` waits for the graceful shutdown, then does what ``shutdown(gracePeriod:clock:)`` does: new
///   requests fail with ``CourierError/Code/clientShutDown`` from then on, the requests in flight go on, and
///   `run()` returns once the last of them has ended.
/// - List the client **before** the services that call it: a `ServiceGroup` shuts its services down in
///   reverse order, so a server stops taking requests and finishes those it has (with their upstream calls)
///   before the client stops taking new ones.
/// - When the group cancels the client (a service failed, or the group's `maximumGracefulShutdownDuration`
///   ran out), `run()` returns at once: the client is shut down, requests sent while
///   ``Configuration/isCancellableOnShutdown`` was on are cancelled (their callers get
///   ``CourierError/Code/clientShutDown``), and the others are left to their callers.
extension Client: Service {
    /// Runs until a graceful shutdown, then shuts the client down and returns when no request is in flight;
    /// returns at once, with the client shut down, when cancelled.
    public nonisolated func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: the group stops without waiting for anyone.
            lifecycle.close()
            lifecycle.cancelInFlight()
            return
        }
        await shutdown()
        if Task.isCancelled {
            // Cancelled while draining: `shutdown()` stopped waiting.
            lifecycle.cancelInFlight()
        }
    }
}
#endif
