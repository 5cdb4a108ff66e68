public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A typed description of an HTTP call whose response decodes to `Response`.
///
/// ```swift
/// let user: User = try await client.send(.get("/users/42"))
/// let created: User = try await client.send(.post("/users", json: NewUser(name: "Ada")))
/// let page: [User] = try await client.send(.get("/users", query: ["tag": ["a", "b"], "q": "a b"]))
/// ```
///
/// **Paths** are appended to the client's base URL path: with the base `https://api.example.com/v1`,
/// `"/users/42"` and `"users/42"` both mean `https://api.example.com/v1/users/42`. A string that starts
/// with `http://` or `https://`, or a `URL`, is used as it is. Characters a path may not contain are
/// percent-encoded (an existing `%XX` escape is kept); control characters are rejected. The base URL's own
/// query and fragment are not kept: pass query items with `query:`. A `/`, `?`, `#` or dot segment in the
/// string keeps its meaning, so put a value you did not write yourself (an id a user typed) in a query item, or
/// in the path through ``PathSegment/encoded(_:)``: `.get("/users/\(PathSegment.encoded(id))")`.
///
/// **Query items** are percent-encoded per RFC 3986: every character but the unreserved ones
/// (`A–Z a–z 0–9 - . _ ~`) is encoded, so a space is `%20`, `+` is `%2B`, `&` is `%26`, `=` is `%3D`, and
/// non-ASCII text is encoded as UTF-8 bytes. An array is sent as a repeated key (`tag=a&tag=b`), and an
/// item with a `nil` value is sent as a bare key (`flag`). Items keep their order.
///
/// **Decoding**: `Response` is decoded from JSON with the client's decoder unless it is one of the special
/// types: `Data` (the raw body), `String` (UTF-8 text), ``EmptyResponse`` (the body is ignored), or an
/// `Optional` (that is `nil` for a 204 or 205 response, an empty body, or a HEAD request). Statuses outside
/// ``acceptableStatus`` throw ``CourierError/Code/unacceptableStatus`` before anything is decoded.
public struct Request<Response>: Sendable {
    /// Where a request goes: a path relative to the client's base URL, or an absolute URL.
    public enum Target: Sendable, Hashable {
        /// A path appended to the client's base URL.
        case path(String)
        /// An absolute URL.
        case url(URL)
    }

    /// The method.
    public var method: HTTPMethod
    /// Where the request goes.
    public var target: Target
    /// Query items, appended in order to any query the target already has.
    public var query: [URLQueryItem]
    /// Header fields.
    public var headers: HTTPHeaders
    /// The body, if any.
    public var body: RequestBody?
    /// The statuses that decode as `Response`; others throw ``CourierError/Code/unacceptableStatus``.
    public var acceptableStatus: Range<Int>
    /// How to decode an API error body on an unacceptable status; `nil` uses the client's.
    public var errorBody: ErrorBodyDecoder?
    /// The longest the whole call may take, middleware included; `nil` for no limit of its own.
    ///
    /// It works with or without a ``Middleware/timeout(_:clock:)`` in the client's middleware: the client
    /// sets it as the call's ``Deadline`` around the whole chain, and a timeout middleware inside waits for
    /// the earlier of its own duration and the time left. When it passes, the call throws a
    /// ``CourierError`` with code ``CourierError/Code/timedOut`` and ``CourierError/timeout`` set to it. Calls with
    /// the same duration share one timer in the client, so the timeout starts no timer of its own for each call
    /// (for the first 16 different durations a client sees; a call with a duration past those gets its own).
    ///
    /// ```swift
    /// let user: User = try await client.send(.get("/users/42", timeout: .seconds(2)))
    /// ```
    public var timeout: Duration?
    /// Turns the response into a `Response`.
    public var decode: @Sendable (Data, HTTPURLResponse, ResponseDecodingContext) throws -> Response

    /// Creates a request with an explicit decoding closure, for any `Response` type.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - target: A path or an absolute URL.
    ///   - query: Query items, appended in order to any query the target already has.
    ///   - headers: Header fields.
    ///   - body: The body, if any.
    ///   - acceptableStatus: Statuses that decode as `Response`.
    ///   - timeout: The longest the call may take; see ``timeout``.
    ///   - decode: Turns the body and response into a `Response`.
    public init(
        method: HTTPMethod,
        target: Target,
        query: [URLQueryItem] = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        acceptableStatus: Range<Int> = 200..<300,
        timeout: Duration? = nil,
        decode: @escaping @Sendable (Data, HTTPURLResponse, ResponseDecodingContext) throws -> Response
    ) {
        self.method = method
        self.target = target
        self.query = query
        self.headers = headers
        self.body = body
        self.acceptableStatus = acceptableStatus
        self.timeout = timeout
        self.decode = decode
    }
}

// MARK: - Decodable responses

extension Request where Response: Decodable & SendableMetatype {
    /// Creates a request whose response is decoded with the client's decoder (or as a special type: `Data`,
    /// `String`, ``EmptyResponse``, `Optional`).
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - target: A path or an absolute URL.
    ///   - query: Query items, appended in order to any query the target already has.
    ///   - headers: Header fields.
    ///   - body: The body, if any.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public init(
        method: HTTPMethod,
        target: Target,
        query: [URLQueryItem] = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        timeout: Duration? = nil
    ) {
        self.init(
            method: method,
            target: target,
            query: query,
            headers: headers,
            body: body,
            timeout: timeout,
            decode: Self.decodeAsDecodable
        )
    }

    @Sendable
    private static func decodeAsDecodable(
        _ data: Data,
        _ response: HTTPURLResponse,
        _ context: ResponseDecodingContext
    ) throws -> Response {
        try ResponseDecoding.decode(Response.self, from: data, response: response, context: context)
    }

    /// A `GET` request.
    ///
    /// - Parameters:
    ///   - path: A path relative to the base URL, or an absolute `http(s)://` URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func get(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .get, target: .path(path), query: query.items, headers: headers, timeout: timeout)
    }

    /// A `GET` request to an absolute URL.
    public static func get(
        _ url: URL,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .get, target: .url(url), query: query.items, headers: headers, timeout: timeout)
    }

    /// A `HEAD` request. Use ``EmptyResponse`` or an `Optional` as the response type.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func head(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .head, target: .path(path), query: query.items, headers: headers, timeout: timeout)
    }

    /// A `DELETE` request.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - body: The body, rarely used with `DELETE`.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func delete(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        timeout: Duration? = nil
    ) -> Request {
        Request(
            method: .delete,
            target: .path(path),
            query: query.items,
            headers: headers,
            body: body,
            timeout: timeout
        )
    }

    /// A `POST` request.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - body: The body, if any.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func post(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .post, target: .path(path), query: query.items, headers: headers, body: body, timeout: timeout)
    }

    /// A `POST` request with a JSON body.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - json: The value sent as the JSON body; see ``RequestBody/json(_:encoder:)``.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func post(
        _ path: String,
        json: some Encodable & Sendable,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        post(path, query: query, headers: headers, body: .json(json), timeout: timeout)
    }

    /// A `PUT` request.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - body: The body, if any.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func put(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .put, target: .path(path), query: query.items, headers: headers, body: body, timeout: timeout)
    }

    /// A `PUT` request with a JSON body.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - json: The value sent as the JSON body; see ``RequestBody/json(_:encoder:)``.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func put(
        _ path: String,
        json: some Encodable & Sendable,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        put(path, query: query, headers: headers, body: .json(json), timeout: timeout)
    }

    /// A `PATCH` request.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - body: The body, if any.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func patch(
        _ path: String,
        query: Query = [],
        headers: HTTPHeaders = [:],
        body: RequestBody? = nil,
        timeout: Duration? = nil
    ) -> Request {
        Request(method: .patch, target: .path(path), query: query.items, headers: headers, body: body, timeout: timeout)
    }

    /// A `PATCH` request with a JSON body.
    ///
    /// - Parameters:
    ///   - path: A path or an absolute URL string.
    ///   - json: The value sent as the JSON body; see ``RequestBody/json(_:encoder:)``.
    ///   - query: Query items; see ``Query``.
    ///   - headers: Header fields.
    ///   - timeout: The longest the call may take; see ``timeout``.
    public static func patch(
        _ path: String,
        json: some Encodable & Sendable,
        query: Query = [],
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil
    ) -> Request {
        patch(path, query: query, headers: headers, body: .json(json), timeout: timeout)
    }
}

// MARK: - Modifiers

extension Request {
    /// Returns a copy with the header `name` set to `value`.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value; `nil` removes it.
    public func header(_ name: String, _ value: String?) -> Request {
        var copy = self
        copy.headers[name] = value
        return copy
    }

    /// Returns a copy that accepts the statuses in `range` (others throw
    /// ``CourierError/Code/unacceptableStatus``).
    public func accepting(_ range: Range<Int>) -> Request {
        var copy = self
        copy.acceptableStatus = range
        return copy
    }

    /// Returns a copy that decodes an unacceptable response's body as `type`, so that the thrown
    /// ``CourierError`` carries it (see ``CourierError/apiError(as:)``).
    public func decodingErrors<E: Decodable & Sendable>(as type: E.Type) -> Request {
        var copy = self
        copy.errorBody = ErrorBodyDecoder(type)
        return copy
    }
}
