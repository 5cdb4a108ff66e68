public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A request as a handler sees it: the `URLRequest`, the path parameters its route captured, and how many
/// calls came before it.
///
/// Every property of the `URLRequest` reads through (`request.url`, `request.httpBody`), and so do the reads
/// the testing kit adds to `URLRequest` for the requests a mock records: `path`, `method`, `header(_:)`,
/// `queryValue(_:)`, `bodyText`, `formItems`, `decodedBody(as:decoder:)`.
///
/// ```swift
/// MockRoute.put("/users/:id") { request in
///     let user = try request.decodedBody(as: NewUser.self)
///     return .json(User(id: request.parameters["id"]!, name: user.name))
/// }
/// #expect(api.lastRequest?.header("Authorization") == "Bearer t2")   // a recorded URLRequest
/// ```
@dynamicMemberLookup
public struct MockRequest: Sendable {
    /// The request as the transport received it.
    public let urlRequest: URLRequest
    /// The values of the route pattern's `:name` segments, by name, percent-decoded; empty outside routes.
    public let parameters: [String: String]
    /// How many calls the route (or, for a mock without routes, the mock) answered before this one: 0 for
    /// the first.
    public let callIndex: Int

    /// Creates a request, for calling a handler yourself.
    ///
    /// - Parameters:
    ///   - urlRequest: The request as a transport receives it.
    ///   - parameters: Captured path parameters.
    ///   - callIndex: How many calls came before this one.
    public init(_ urlRequest: URLRequest, parameters: [String: String] = [:], callIndex: Int = 0) {
        self.urlRequest = urlRequest
        self.parameters = parameters
        self.callIndex = callIndex
    }

    /// Reads a property of the `URLRequest`, the kit's reads included.
    public subscript<Value>(dynamicMember keyPath: KeyPath<URLRequest, Value>) -> Value {
        urlRequest[keyPath: keyPath]
    }

    /// The value of the header `name` (case-insensitive), or `nil`.
    public func header(_ name: String) -> String? { urlRequest.header(name) }

    /// The value of the first query item called `name`, or `nil`; `""` for an item without a value.
    public func queryValue(_ name: String) -> String? { urlRequest.queryValue(name) }

    /// Decodes the JSON body as `type`.
    ///
    /// - Parameters:
    /// - Throws: ``MockTransportError`` when the request has no body, or the decoder's error.
    public func decodedBody<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try urlRequest.decodedBody(as: type, decoder: decoder)
    }
}

/// The reads that make a recorded request easy to check in `#expect`:
///
/// ```swift
/// let sent = try #require(api.lastRequest)
/// #expect(sent.method == .post)
/// #expect(sent.path == "/users")
/// #expect(sent.header("Authorization") == "Bearer t1")
/// #expect(try sent.decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
/// ```
extension URLRequest {
    /// The method (`GET` when none is set, as URLSession does).
    public var method: HTTPMethod { HTTPMethod(rawValue: httpMethod ?? "GET") }

    /// The URL's path, percent-decoded (for example `/users/42`); `/` when the URL has none.
    public var path: String {
        guard let url else { return "/" }
        let path = url.path
        return path.isEmpty ? "/" : path
    }

    /// The URL's query items, percent-decoded, in order.
    public var queryItems: [URLQueryItem] {
        guard let url else { return [] }
        return URLComponents(url: url, resolvingAgainstBaseURL: true)?.queryItems ?? []
    }

    /// The value of the first query item called `name` (case-sensitive), or `nil` when there is none; an
    /// item without a value, such as `?flag`, gives `""`.
    public func queryValue(_ name: String) -> String? {
        guard let item = queryItems.first(where: { $0.name == name }) else { return nil }
        return item.value ?? ""
    }

    /// The value of the header `name` (case-insensitive), or `nil`; repeated fields are joined with commas,
    /// as `URLRequest` stores them.
    public func header(_ name: String) -> String? {
        value(forHTTPHeaderField: name)
    }

    /// The body as UTF-8 text, or `nil` when there is no body or it is not UTF-8.
    public var bodyText: String? {
        guard let httpBody else { return nil }
        return String(data: httpBody, encoding: .utf8)
    }

    /// The body read as `application/x-www-form-urlencoded` items (`+` is a space), in order; empty when
    /// there is no body.
    public var formItems: [URLQueryItem] {
        guard let text = bodyText, !text.isEmpty else { return [] }
        var components = URLComponents()
        components.percentEncodedQuery = text.replacingOccurrences(of: "+", with: "%20")
        return components.queryItems ?? []
    }

    /// Decodes the JSON body as `type`.
    ///
    /// - Parameters:
    ///   - type: The type to decode; inferred from the context by default.
    ///   - decoder: The decoder; a plain `JSONDecoder` by default.
    /// - Throws: ``MockTransportError`` when the request has no body, or the decoder's error.
    public func decodedBody<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        guard let httpBody else {
            throw MockTransportError(message: "\(method) \(path) has no body to decode as \(T.self)")
        }
        return try decoder.decode(T.self, from: httpBody)
    }

    /// A one-line description with secrets redacted, for messages: `POST /users?x=1`.
    var summary: String {
        guard let url else { return "\(method) <no URL>" }
        var text = "\(method) \(path)"
        if let query = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedQuery, !query.isEmpty {
            let redacted = Redaction.redactedURL(URL(string: "http://h/?" + query) ?? url)
            text += redacted.firstIndex(of: "?").map { String(redacted[$0...]) } ?? ""
        }
        return text
    }

    /// The header fields with secrets redacted, sorted by name, for messages.
    var redactedHeaderSummary: String {
        let headers = Redaction.redactedHeaders(allHTTPHeaderFields ?? [:])
        return headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { "\($0.key): \($0.value)" }
            .joined(separator: ", ")
    }
}
