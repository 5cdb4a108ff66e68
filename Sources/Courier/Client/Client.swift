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
/// (or error) last. ``use(_:)-(Middleware...)`` appends, so what you add later runs nearer the transport.
///
/// **Concurrency**: the configuration (base URL, transport, middleware, coders) is isolated to the actor,
/// and every change composes a new immutable chain. `send` is `nonisolated`: it reads the current chain
/// under a lock and never hops onto the actor, so any number of concurrent sends proceed in parallel.
/// A request already sent keeps the chain it started with.
public actor Client {
    /// What `send` reads: everything a request needs, composed once per configuration change.
    final class Snapshot: Sendable {
        let chain: Chain
        let baseURL: URL?
        let encoder: JSONEncoder
        let decoder: JSONDecoder
        let errorBody: ErrorBodyDecoder?

        init(
            middleware: [Middleware],
            transport: any Transport,
            baseURL: URL?,
            encoder: JSONEncoder,
            decoder: JSONDecoder,
            errorBody: ErrorBodyDecoder?
        ) {
            self.chain = Chain(middleware: middleware, transport: transport)
            self.baseURL = baseURL
            self.encoder = encoder
            self.decoder = decoder
            self.errorBody = errorBody
        }
    }

    /// The URL that request paths are relative to.
    public private(set) var baseURL: URL?
    /// The transport at the end of the chain.
    public private(set) var transport: any Transport
    /// The middleware, outermost first.
    public private(set) var middleware: [Middleware]
    /// The encoder for JSON request bodies that bring none of their own.
    public private(set) var encoder: JSONEncoder
    /// The decoder for JSON responses.
    public private(set) var decoder: JSONDecoder
    /// How to decode API error bodies for requests that declare none.
    public private(set) var errorBody: ErrorBodyDecoder?

    private let current: LockedState<Snapshot>
    /// Requests in flight and the shutdown state; see `Client+Shutdown.swift`.
    nonisolated let lifecycle = ClientLifecycle()

    /// Creates a client.
    ///
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
        self.baseURL = baseURL
        self.transport = transport
        self.middleware = middleware
        self.encoder = encoder
        self.decoder = decoder
        self.errorBody = errorBody
        self.current = LockedState(
            Snapshot(
                middleware: middleware,
                transport: transport,
                baseURL: baseURL,
                encoder: encoder,
                decoder: decoder,
                errorBody: errorBody
            )
        )
    }

    // MARK: Configuration

    /// Appends middleware to the end of the list, nearest the transport.
    ///
    /// - Parameter middleware: The middleware to add, outermost first.
    public func use(_ middleware: Middleware...) {
        use(middleware)
    }

    /// Appends middleware to the end of the list, nearest the transport.
    ///
    /// - Parameter middleware: The middleware to add, outermost first.
    public func use(_ middleware: [Middleware]) {
        self.middleware.append(contentsOf: middleware)
        publish()
    }

    /// Inserts middleware at `index` in the list (0 is outermost).
    ///
    /// - Parameters:
    ///   - middleware: The middleware to insert.
    ///   - index: The position, from 0 to the number of middleware.
    public func insert(_ middleware: Middleware, at index: Int) {
        self.middleware.insert(middleware, at: Swift.min(Swift.max(index, 0), self.middleware.count))
        publish()
    }

    /// Replaces the whole middleware list.
    ///
    /// - Parameter middleware: The new list, outermost first.
    public func setMiddleware(_ middleware: [Middleware]) {
        self.middleware = middleware
        publish()
    }

    /// Removes every middleware with the given name.
    ///
    /// - Parameter name: The name given to the middleware.
    public func removeMiddleware(named name: String) {
        middleware.removeAll { $0.name == name }
        publish()
    }

    /// Replaces the transport.
    ///
    /// - Parameter transport: The new transport.
    public func setTransport(_ transport: any Transport) {
        self.transport = transport
        publish()
    }

    /// Replaces the base URL.
    ///
    /// - Parameter baseURL: The new base URL.
    public func setBaseURL(_ baseURL: URL?) {
        self.baseURL = baseURL
        publish()
    }

    /// Replaces the JSON coders.
    ///
    /// - Parameters:
    ///   - encoder: The encoder for request bodies.
    ///   - decoder: The decoder for responses.
    public func setCoders(encoder: JSONEncoder, decoder: JSONDecoder) {
        self.encoder = encoder
        self.decoder = decoder
        publish()
    }

    /// Replaces how API error bodies are decoded for requests that declare none.
    ///
    /// - Parameter errorBody: The decoder, or `nil` for none.
    public func setErrorBody(_ errorBody: ErrorBodyDecoder?) {
        self.errorBody = errorBody
        publish()
    }

    private func publish() {
        let snapshot = Snapshot(
            middleware: middleware,
            transport: transport,
            baseURL: baseURL,
            encoder: encoder,
            decoder: decoder,
            errorBody: errorBody
        )
        current.withLock { $0 = snapshot }
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
    /// - Parameter request: The request.
    /// - Returns: The response body and the HTTP response.
    /// - Throws: ``CourierError``, `CancellationError`, or an error of your own middleware.
    public nonisolated func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let chain = current.withLock { $0.chain }
        return try await lifecycle.send(request, through: chain)
    }

    /// Sends a typed request and decodes its response.
    ///
    /// - Parameter request: The request.
    /// - Returns: The decoded response.
    /// - Throws: ``CourierError`` (``CourierError/Code/invalidRequest``, ``CourierError/Code/transport``,
    ///   ``CourierError/Code/unacceptableStatus``, ``CourierError/Code/decodingFailed``, …),
    ///   `CancellationError`, or an error of your own middleware.
    public nonisolated func send<Response>(_ request: Request<Response>) async throws -> Response {
        try await response(for: request).value
    }

    /// Sends a typed request and returns the decoded value together with the HTTP response, for when the
    /// headers or status matter too.
    ///
    /// - Parameter request: The request.
    /// - Returns: The decoded value and the HTTP response.
    /// - Throws: The same errors as ``send(_:)-(Request<Response>)``.
    public nonisolated func response<Response>(
        for request: Request<Response>
    ) async throws -> (value: Response, response: HTTPURLResponse) {
        let snapshot = self.snapshot
        let urlRequest = try request.urlRequest(baseURL: snapshot.baseURL, encoder: snapshot.encoder)
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await lifecycle.send(urlRequest, through: snapshot.chain)
        } catch let error as CourierError where error.code == .unacceptableStatus {
            // A status-validating middleware threw before this request's own check: decode the error body
            // the request (or the client) declares, unless the middleware already did.
            throw error.decodingAPIError(with: request.errorBody ?? snapshot.errorBody, decoder: snapshot.decoder)
        }
        let context = ResponseDecodingContext(decoder: snapshot.decoder, request: urlRequest)
        guard request.acceptableStatus.contains(response.statusCode) else {
            var error = CourierError.unacceptableStatus(
                request: urlRequest,
                response: response,
                body: data,
                acceptable: request.acceptableStatus
            )
            if !data.isEmpty, let errorBody = request.errorBody ?? snapshot.errorBody {
                error.decodedAPIError = errorBody.decode(data, snapshot.decoder)
            }
            throw error.attributed(toMiddleware: nil)
        }
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
}
