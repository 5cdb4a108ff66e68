import AsyncHTTPClient
public import Foundation
public import HTTPTypes
import OpenAPIAsyncHTTPClient
@_spi(Generated) public import OpenAPIRuntime
import OpenAPIURLSession

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// swift-openapi-runtime's client over its own transports (swift-openapi-async-http-client and
/// swift-openapi-urlsession), with no middleware and with an authentication middleware: the peer in the
/// end-to-end benchmarks.
///
/// As in ``OpenAPIPeer``, the serializer hands over a prebuilt request; the deserializer collects the body into
/// `Data`, as a generated client does before it decodes JSON, so each call returns what `Client.send` returns.
public struct OpenAPIClients: Sendable {
    /// The peer's clients over one transport: without middleware, and with ``AuthenticatingClientMiddleware``.
    public struct Pair: Sendable {
        let bare: UniversalClient
        let authenticating: UniversalClient
        /// `Accept` and `Authorization`, for the client without middleware.
        let request: HTTPRequest
        /// `Accept` only, for the client whose middleware adds `Authorization`.
        let unauthenticatedRequest: HTTPRequest

        init(url: URL, transport: some ClientTransport) {
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
            let path = components.percentEncodedPath
            components.percentEncodedPath = ""
            let serverURL = components.url!
            bare = UniversalClient(serverURL: serverURL, transport: transport)
            authenticating = UniversalClient(
                serverURL: serverURL,
                transport: transport,
                middlewares: [AuthenticatingClientMiddleware(token: DefaultStack.token)]
            )
            unauthenticatedRequest = HTTPRequest(
                method: .get,
                scheme: nil,
                authority: nil,
                path: path,
                headerFields: [.accept: "application/json"]
            )
            var request = unauthenticatedRequest
            request.headerFields[.authorization] = "Bearer \(DefaultStack.token)"
            self.request = request
        }

        /// Gets the resource through the client without middleware, or through the one with the authentication
        /// middleware.
        ///
        /// - Parameter authenticating: Whether to use the client with the authentication middleware.
        /// - Returns: The status and the body.
        /// - Throws: What the client throws.
        public func get(authenticating: Bool) async throws -> (HTTPResponse.Status, Data) {
            let request = authenticating ? unauthenticatedRequest : request
            return try await (authenticating ? self.authenticating : bare).send(
                input: (),
                forOperation: "listItems",
                serializer: { _ in (request, nil) },
                deserializer: { response, body in
                    guard let body else { return (response.status, Data()) }
                    return (response.status, try await Data(collecting: body, upTo: 1 << 20))
                }
            )
        }
    }

    /// Over swift-openapi-async-http-client's transport, borrowing the given `HTTPClient`.
    public let asyncHTTPClient: Pair
    /// Over swift-openapi-urlsession's transport, with a session of its own configured like
    /// `URLSessionTransport`'s.
    public let urlSession: Pair
    let session: URLSession

    /// Makes the clients.
    ///
    /// - Parameters:
    ///   - url: The resource every call gets.
    ///   - httpClient: The client the AsyncHTTPClient transport borrows.
    ///   - configuration: The configuration of the URLSession transport's session.
    init(url: URL, httpClient: HTTPClient, configuration: URLSessionConfiguration) {
        asyncHTTPClient = Pair(
            url: url,
            transport: OpenAPIAsyncHTTPClient.AsyncHTTPClientTransport(configuration: .init(client: httpClient))
        )
        session = URLSession(configuration: configuration)
        urlSession = Pair(
            url: url,
            transport: OpenAPIURLSession.URLSessionTransport(configuration: .init(session: session))
        )
    }

    /// Gets the resource through the peer's client over `transport` (see ``Pair/get(authenticating:)``).
    ///
    /// - Parameters:
    ///   - transport: Which transport.
    ///   - authenticating: Whether to use the client with the authentication middleware.
    /// - Returns: The status and the body.
    /// - Throws: What the client throws.
    public func get(over transport: LoopbackTransport, authenticating: Bool) async throws -> (HTTPResponse.Status, Data)
    {
        switch transport {
        case .asyncHTTPClient: try await asyncHTTPClient.get(authenticating: authenticating)
        case .urlSession: try await urlSession.get(authenticating: authenticating)
        }
    }

    func invalidate() {
        session.finishTasksAndInvalidate()
    }
}

/// A swift-openapi-runtime middleware that sets `Authorization` to a static bearer token: the peer's
/// `.authenticating(token:)`.
public struct AuthenticatingClientMiddleware: ClientMiddleware {
    /// The rest of the chain, as `intercept` is handed it.
    public typealias Next = @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    let value: String

    /// Creates the middleware.
    ///
    /// - Parameter token: The bearer token.
    public init(token: String) {
        value = "Bearer \(token)"
    }

    /// Sets `Authorization`, then calls `next`.
    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: Next
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = value
        return try await next(request, body, baseURL)
    }
}
