public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension Client {
    /// Sends a typed request through the middleware and returns as soon as the response head arrives, with
    /// the body streaming.
    ///
    /// ```swift
    /// let (body, response) = try await client.stream(.get("/exports/users.ndjson"), idleTimeout: .seconds(30))
    /// for try await user in body.jsonLines(of: User.self) {
    ///     try await store.save(user)
    /// }
    /// ```
    ///
    /// **The middleware** see the call as they see any other, with the head and an empty body: authentication
    /// refreshes and sends it again, retry and redirects act on the head, a `.timeout` bounds the time to the
    /// head, counting counts it. Only a `2xx` response streams; any other status is read whole (at most
    /// 10 MiB), so the layers that read an error body, and the `unacceptableStatus` error thrown here when
    /// the request does not accept the status, see it as for ``send(_:)-(Request<Response>)``.
    ///
    /// **The body** is the caller's once this returns: it arrives with backpressure, and stopping it (leaving
    /// the loop, cancelling the task, ``StreamedBody/cancel()``, dropping it) stops the transport. The call
    /// counts as in flight for the client's graceful shutdown until its body ends.
    ///
    /// - Parameters:
    ///   - request: The request; its ``Request/timeout`` bounds the time to the head.
    ///   - idleTimeout: The longest the body may go without a chunk arriving (not counting time the transport is
    ///     paused because you read slowly); `nil` for no limit. When it passes, reading throws
    ///     ``CourierError/Code/timedOut`` and the transport is stopped.
    ///   - totalTimeout: The longest the whole call may take, head and body, or `nil` for no limit.
    ///   - clock: The clock that measures both timeouts.
    /// - Returns: The body and the response head.
    /// - Throws: What ``send(_:)-(Request<Response>)`` throws while waiting for the head.
    public nonisolated func stream<C: Clock<Duration>>(
        _ request: Request<Data>,
        idleTimeout: Duration? = nil,
        totalTimeout: Duration? = nil,
        clock: C = ContinuousClock()
    ) async throws -> (body: StreamedBody, response: HTTPURLResponse) {
        let snapshot = self.snapshot
        let urlRequest = try request.urlRequest(
            baseURL: snapshot.configuration.baseURL,
            encoder: snapshot.configuration.encoder
        )
        let (body, response) = try await Self.decodingAPIErrors(of: request, snapshot) {
            try await openStream(
                urlRequest,
                headTimeout: request.timeout,
                idleTimeout: idleTimeout,
                totalTimeout: totalTimeout,
                clock: clock,
                through: snapshot.streamingChain
            )
        }
        if !request.acceptableStatus.contains(response.statusCode) {
            // Not a 2xx (those are the only ones that stream): the body is one chunk in memory.
            let data = try await body.collect(upTo: StreamCall.errorBodyLimit)
            try Self.checkStatus(of: response, body: data, for: request, urlRequest, snapshot)
        }
        return (body, response)
    }

    /// Sends a `URLRequest` through the middleware and returns as soon as the response head arrives, with the
    /// body streaming; the response is returned whatever its status.
    ///
    /// Everything said of ``stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)`` holds, but no
    /// status is checked here.
    public nonisolated func stream<C: Clock<Duration>>(
        _ request: URLRequest,
        idleTimeout: Duration? = nil,
        totalTimeout: Duration? = nil,
        clock: C = ContinuousClock()
    ) async throws -> (body: StreamedBody, response: HTTPURLResponse) {
        try await openStream(
            request,
            headTimeout: nil,
            idleTimeout: idleTimeout,
            totalTimeout: totalTimeout,
            clock: clock,
            through: snapshot.streamingChain
        )
    }

    private nonisolated func openStream<C: Clock<Duration>>(
        _ request: URLRequest,
        headTimeout: Duration?,
        idleTimeout: Duration?,
        totalTimeout: Duration?,
        clock: C,
        through chain: Chain
    ) async throws -> (StreamedBody, HTTPURLResponse) {
        if let idleTimeout { precondition(idleTimeout > .zero, "an idle timeout must be positive") }
        let start = clock.now
        let operation: @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
        if let timeout = [headTimeout, totalTimeout].compactMap({ $0 }).min() {
            operation = { request in
                try await TimeoutRunner.run(timeout, clock: clock, request: request) {
                    try await chain.send($0, from: 0)
                }
            }
        } else {
            operation = { try await chain.send($0, from: 0) }
        }
        let (body, response) = try await lifecycle.stream(request, call: StreamCall(), operation: operation)
        StreamWatchdog.watch(
            body,
            idleTimeout: idleTimeout,
            totalTimeout: totalTimeout,
            from: start,
            clock: clock,
            request: request
        )
        return (body, response)
    }
}
