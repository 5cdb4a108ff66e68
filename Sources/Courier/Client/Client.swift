public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Sends requests through a list of middleware and a transport.
///
/// ```swift
/// let client = Client(
///     baseURL: URL(string: "https://api.example.com")!,
///     middleware: [.retry(.default), .validatingStatus()]
/// )
/// let user: User = try await client.send(.get("/users/42"))
/// ```
///
/// **Order**: the middleware listed first is the outermost. It sees the request first and the response
/// (or error) last, so what you append later runs nearer the transport.
///
/// **Configuration**: everything the client is set up with is one ``Configuration`` value. Change it with
/// ``update(_:)``; each change composes a new immutable chain, once. `send` is `nonisolated`: it reads the
/// current chain under a lock and never hops onto the actor, so any number of concurrent sends proceed in
/// parallel. A request already sent keeps the chain it started with.
public actor Client {
    /// What `send` reads: the configuration and its chain, composed once per change.
    final class Snapshot: Sendable {
        let configuration: Configuration
        let chain: Chain
        /// The same middleware in front of the transport's streaming side (see `StreamCall`).
        let streamingChain: Chain

        init(_ configuration: Configuration) {
            self.configuration = configuration
            self.chain = Chain(
                middleware: configuration.middleware,
                transport: configuration.transport,
                baseURL: configuration.baseURL
            )
            self.streamingChain = Chain(
                middleware: configuration.middleware,
                transport: StreamingTransport(base: configuration.transport),
                baseURL: configuration.baseURL
            )
        }
    }

    // The client's whole state. Only `update(_:)` replaces it, and the actor runs one update at a time, so
    // an update never loses another's change; `send` reads it without the actor.
    private let current: LockedState<Snapshot>
    /// Requests in flight and the shutdown state; see `Client+Shutdown.swift`.
    nonisolated let lifecycle = ClientLifecycle()
    /// The shared timers of the requests' own timeouts (``Request/timeout``), one per duration.
    nonisolated let requestTimeouts = RequestTimeouts()

    /// Creates a client from a configuration.
    public init(configuration: Configuration) {
        self.current = LockedState(Snapshot(configuration))
        lifecycle.isCancellable = configuration.isCancellableOnShutdown
    }

    /// - Parameters:
    ///   - baseURL: The URL that request paths are relative to.
    ///   - transport: What sends requests; ``URLSessionTransport`` by default.
    ///   - middleware: The middleware, outermost first.
    ///   - encoder: The encoder for JSON request bodies.
    ///   - decoder: The decoder for JSON responses.
    ///   - errorBody: How to decode API error bodies on unacceptable statuses; see ``ErrorBodyDecoder``.
    public init(
        baseURL: URL? = nil,
        transport: any Transport = URLSessionTransport(),
        middleware: [Middleware] = [],
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        errorBody: ErrorBodyDecoder? = nil
    ) {
        self.init(
            configuration: Configuration(
                baseURL: baseURL,
                transport: transport,
                middleware: middleware,
                encoder: encoder,
                decoder: decoder,
                errorBody: errorBody
            )
        )
    }

    // MARK: Configuration

    /// The configuration now; reading it does not wait for the actor.
    public nonisolated var configuration: Configuration {
        current.withLock { $0.configuration }
    }

    /// Changes the configuration; requests sent from now on use the new one, those in flight keep theirs.
    ///
    /// ```swift
    /// await client.update { $0.middleware.insert(.counting(counter), at: 0) }   // the outermost
    /// await client.update { $0.transport = AsyncHTTPClientTransport() }
    /// ```
    ///
    /// The chain is composed once, after `body` returns; when `body` throws, nothing changes. `body` runs on
    /// the client's actor, so it can capture the caller's values but not touch the caller's isolated state.
    public func update(_ body: sending (inout Configuration) throws -> Void) rethrows {
        var configuration = self.configuration
        try body(&configuration)
        let snapshot = Snapshot(configuration)
        current.withLock { $0 = snapshot }
        lifecycle.isCancellable = configuration.isCancellableOnShutdown
    }

    nonisolated var snapshot: Snapshot {
        current.withLock { $0 }
    }

    // MARK: Sending

    /// Sends a `URLRequest` through the middleware and the transport, and returns the response as it is.
    ///
    /// The request is sent as it is (its URL must be absolute). No status is checked here; add
    /// ``Middleware/validatingStatus(_:errorBody:decoder:)-(Range<Int>,_,_)`` for that.
    ///
    /// - Returns: The response body and the HTTP response.
    /// - Throws: ``CourierError``, `CancellationError`, or an error of your own middleware.
    public nonisolated func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let chain = current.withLock { $0.chain }
        return try await lifecycle.send(request, through: chain)
    }

    /// Sends a typed request and decodes its response.
    ///
    /// - Throws: ``CourierError`` (``CourierError/Code/invalidRequest``, ``CourierError/Code/transport``,
    ///   ``CourierError/Code/unacceptableStatus``, ``CourierError/Code/decodingFailed``, …),
    ///   `CancellationError`, or an error of your own middleware.
    public nonisolated func send<Response>(_ request: Request<Response>) async throws -> Response {
        try await response(for: request).value
    }

    /// Sends a typed request and returns the decoded value together with the HTTP response, for when the
    /// headers or status matter too.
    ///
    /// - Returns: The decoded value and the HTTP response.
    /// - Throws: The same errors as ``send(_:)-(Request<Response>)``.
    public nonisolated func response<Response>(
        for request: Request<Response>
    ) async throws -> (value: Response, response: HTTPURLResponse) {
        // `snapshot.configuration.x`, not a local copy of the configuration: a copy would retain and
        // release every part of it on each request.
        let snapshot = self.snapshot
        let urlRequest = try request.urlRequest(
            baseURL: snapshot.configuration.baseURL,
            encoder: snapshot.configuration.encoder
        )
        let (data, response) = try await Self.decodingAPIErrors(of: request, snapshot) {
            if let timeout = request.timeout {
                try await sendTimingOut(urlRequest, after: timeout, through: snapshot.chain)
            } else {
                try await lifecycle.send(urlRequest, through: snapshot.chain)
            }
        }
        try Self.checkStatus(of: response, body: data, for: request, urlRequest, snapshot)
        let context = ResponseDecodingContext(decoder: snapshot.configuration.decoder, request: urlRequest)
        do {
            return (try request.decode(data, response, context), response)
        } catch let error as CourierError {
            throw error.attributed(toMiddleware: nil)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw CourierError(
                .decodingFailed,
                message: "the response could not be decoded as \(Response.self)",
                request: urlRequest,
                response: response,
                body: data,
                underlying: error
            ).attributed(toMiddleware: nil)
        }
    }

    /// Runs `exchange`; a status-validating middleware's error gets the error body the request (or the
    /// client) declares decoded, unless the middleware already did.
    @inline(__always)
    static func decodingAPIErrors<Response, Result>(
        of request: Request<Response>,
        _ snapshot: Snapshot,
        _ exchange: () async throws -> Result
    ) async throws -> Result {
        do {
            return try await exchange()
        } catch let error as CourierError where error.code == .unacceptableStatus {
            throw error.decodingAPIError(
                with: request.errorBody ?? snapshot.configuration.errorBody,
                decoder: snapshot.configuration.decoder
            )
        }
    }

    /// Throws ``CourierError/Code/unacceptableStatus``, with the declared error body decoded, when `request`
    /// does not accept the response's status.
    static func checkStatus<Response>(
        of response: HTTPURLResponse,
        body data: Data,
        for request: Request<Response>,
        _ urlRequest: URLRequest,
        _ snapshot: Snapshot
    ) throws {
        guard !request.acceptableStatus.contains(response.statusCode) else { return }
        let acceptable = request.acceptableStatus
        let error = CourierError.unacceptableStatus(
            request: urlRequest,
            response: response,
            body: data,
            expected: "\(acceptable.lowerBound)..<\(acceptable.upperBound)"
        )
        throw error.decodingAPIError(
            with: request.errorBody ?? snapshot.configuration.errorBody,
            decoder: snapshot.configuration.decoder,
            body: data
        ).attributed(toMiddleware: nil)
    }

    // MARK: A forgotten response type

    /// What `send(.get("/x"))` resolves to when the response type cannot be inferred: a compile-time error
    /// that says how to write it. Without it, the compiler would try the `URLRequest` overload and report
    /// that `URLRequest` has no member `get`.
    @available(
        *,
        unavailable,
        message:
            "write the response type: `let user: User = try await client.send(.get(…))`, or `let _: EmptyResponse = …` to ignore the body"
    )
    public nonisolated func send(_ request: Request<Never>) async throws -> Never {
        fatalError("unavailable")
    }

    /// The same compile-time error for `response(for:)` without a response type.
    @available(
        *,
        unavailable,
        message:
            "write the response type: `let (user, response): (User, HTTPURLResponse) = try await client.response(for: .get(…))`"
    )
    public nonisolated func response(
        for request: Request<Never>
    ) async throws -> (value: Never, response: HTTPURLResponse) {
        fatalError("unavailable")
    }

    /// Sends `request` under a deadline `duration` from now (a ``Request/timeout``), as a
    /// ``Middleware/timeout(_:clock:)`` in front of the first layer would: on the client's shared timer for that
    /// duration (see `RequestTimeouts`), or, for a duration past the timers' limit or not above zero, the
    /// per-request race around the whole chain.
    private nonisolated func sendTimingOut(
        _ request: URLRequest,
        after duration: Duration,
        through chain: Chain
    ) async throws -> (Data, HTTPURLResponse) {
        let timeout: RequestTimeout =
            if duration > .zero, let timer = requestTimeouts.timer(for: duration) {
                .onTimer(duration, timer)
            } else {
                .race(duration)
            }
        return try await lifecycle.send(request, through: chain, timeout: timeout)
    }
}
