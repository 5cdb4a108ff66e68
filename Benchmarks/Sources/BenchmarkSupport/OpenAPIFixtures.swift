public import Foundation
public import HTTPTypes
@_spi(Generated) public import OpenAPIRuntime

/// Answers every request with `200 OK` and the same prebuilt body, without suspending: the peer's
/// counterpart of ``InMemoryTransport``.
public struct InMemoryClientTransport: ClientTransport {
    let response = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"])
    /// Built once, like `InMemoryTransport`'s `Data`: the body is never read here.
    let body = HTTPBody(Fixtures.body)

    /// Creates the transport.
    public init() {}

    /// Returns the prebuilt response.
    ///
    /// - Parameters:
    ///   - request: Ignored.
    ///   - body: Ignored.
    ///   - baseURL: Ignored.
    ///   - operationID: Ignored.
    /// - Returns: The response and its body.
    /// - Throws: Never.
    public func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        (response, self.body)
    }
}

/// A swift-openapi-runtime middleware that only calls `next`.
public struct PassThroughClientMiddleware: ClientMiddleware {
    /// Creates the middleware.
    public init() {}

    /// Calls `next` with what it was given.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: The request body.
    ///   - baseURL: The server URL.
    ///   - operationID: The operation.
    ///   - next: The rest of the chain.
    /// - Returns: What `next` returns.
    /// - Throws: What `next` throws.
    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await next(request, body, baseURL)
    }
}

/// The peer's calls: `UniversalClient` (what generated clients call) over ``InMemoryClientTransport``.
///
/// The serializer hands over a prebuilt request and the deserializer returns the status, so what is
/// measured is the client's own path: its middleware chain (which it builds anew on every call, as nested
/// closures) and its error wrapping.
public enum OpenAPIPeer {
    static let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/users/42")
    static let serverURL = URL(string: "http://127.0.0.1:8080")!

    /// Calls straight to the peer's in-memory transport.
    ///
    /// - Returns: The calls.
    public static func callingDirectly() -> Calls {
        let transport = InMemoryClientTransport()
        let request = request
        let serverURL = serverURL
        return { count in
            for _ in 0..<count {
                sink(try await transport.send(request, body: nil, baseURL: serverURL, operationID: "getUser"))
            }
        }
    }

    /// `UniversalClient.send` calls through `layers` pass-through middlewares.
    ///
    /// - Parameter layers: How many middlewares.
    /// - Returns: The calls.
    public static func sending(layers: Int) -> Calls {
        let client = UniversalClient(
            serverURL: serverURL,
            transport: InMemoryClientTransport(),
            middlewares: Array(repeating: PassThroughClientMiddleware(), count: layers)
        )
        let request = request
        return { count in
            for _ in 0..<count {
                let status = try await client.send(
                    input: (),
                    forOperation: "getUser",
                    serializer: { _ in (request, nil) },
                    deserializer: { response, _ in response.status.code }
                )
                sink(status)
            }
        }
    }
}
