/// What `/echo` (and `/redirect-chain/0`) answers: the request exactly as the server saw it.
///
/// Header names are lowercased; a header sent several times keeps every value, in order. The
/// `Host` header, which HTTP/1.1 carries as a header but the server holds as the request's
/// authority, is listed under `host` like any other header.
public struct EchoResponse: Codable, Sendable, Equatable {
    /// The name of the server that answered (`"a"` or `"b"` for ``TestServers/withTwoOrigins(isolation:_:)``).
    public var server: String
    /// The answering server's origin, `http://127.0.0.1:PORT`.
    public var origin: String
    /// The request method, for example `"GET"`.
    public var method: String
    /// The request path, still percent-encoded, without the query.
    public var path: String
    /// The raw query string, without the `?`, or `nil` when the target had none.
    public var query: String?
    /// The query decoded into names and values (percent-decoding only; `+` stays `+`).
    public var queryItems: [String: [String]]
    /// Every request header: lowercased name to values in the order received.
    public var headers: [String: [String]]
    /// The body as UTF-8 text, or `nil` when it is not valid UTF-8.
    public var body: String?
    /// The body, base64-encoded (empty for an empty body).
    public var bodyBase64: String
    /// The body's length in bytes.
    public var bodyLength: Int

    /// Creates an echo description.
    ///
    /// - Parameters:
    ///   - server: The name of the answering server.
    ///   - origin: The answering server's origin.
    ///   - method: The request method.
    ///   - path: The percent-encoded request path.
    ///   - query: The raw query string, if any.
    ///   - queryItems: The decoded query.
    ///   - headers: The request headers, lowercased names to values.
    ///   - body: The request body as text, if it is UTF-8.
    ///   - bodyBase64: The request body, base64-encoded.
    ///   - bodyLength: The body length in bytes.
    public init(
        server: String,
        origin: String,
        method: String,
        path: String,
        query: String?,
        queryItems: [String: [String]],
        headers: [String: [String]],
        body: String?,
        bodyBase64: String,
        bodyLength: Int
    ) {
        self.server = server
        self.origin = origin
        self.method = method
        self.path = path
        self.query = query
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.bodyBase64 = bodyBase64
        self.bodyLength = bodyLength
    }

    /// The first value of a header, looked up case-insensitively.
    ///
    /// - Parameter name: The header name, in any case.
    /// - Returns: The first value received for that header, or `nil` if it was not sent.
    public func header(_ name: String) -> String? {
        self.headers[name.lowercased()]?.first
    }
}
