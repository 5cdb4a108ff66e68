public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A request that tests can look into: its method, path, query, headers and body, decoded on demand.
///
/// `URLRequest` (what ``RecordingTransport`` and ``MockTransport`` record) and ``MockRequest`` (what a
/// route's handler receives) both conform, so the same reads work on either:
///
/// ```swift
/// let sent = try #require(recorder.lastRequest)
/// #expect(sent.method == .post)
/// #expect(sent.path == "/users")
/// #expect(sent.header("Authorization") == "Bearer t1")
/// #expect(try sent.decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
/// ```
public protocol InspectableRequest {
    /// The request as a transport sees it.
    var urlRequest: URLRequest { get }
}

extension URLRequest: InspectableRequest {
    /// The request itself.
    public var urlRequest: URLRequest { self }
}

extension InspectableRequest {
    /// The method (`GET` when none is set, as URLSession does).
    public var method: HTTPMethod { HTTPMethod(rawValue: urlRequest.httpMethod ?? "GET") }

    /// The URL's path, percent-decoded (for example `/users/42`); `/` when the URL has none.
    public var path: String {
        guard let url = urlRequest.url else { return "/" }
        let path = url.path
        return path.isEmpty ? "/" : path
    }

    /// The URL's query items, percent-decoded, in order.
    public var queryItems: [URLQueryItem] {
        guard let url = urlRequest.url else { return [] }
        return URLComponents(url: url, resolvingAgainstBaseURL: true)?.queryItems ?? []
    }

    /// The value of the first query item called `name`, or `nil` when there is none (an item without a
    /// value, such as `?flag`, gives `""`).
    ///
    /// - Parameter name: The item's name (case-sensitive).
    /// - Returns: Its value.
    public func queryValue(_ name: String) -> String? {
        guard let item = queryItems.first(where: { $0.name == name }) else { return nil }
        return item.value ?? ""
    }

    /// The value of the header `name` (case-insensitive), or `nil`.
    ///
    /// - Parameter name: The header's name.
    /// - Returns: Its value; repeated fields are joined with commas, as `URLRequest` stores them.
    public func header(_ name: String) -> String? {
        urlRequest.value(forHTTPHeaderField: name)
    }

    /// The body, or `nil` when the request has none.
    public var bodyData: Data? { urlRequest.httpBody }

    /// The body as UTF-8 text, or `nil` when there is no body or it is not UTF-8.
    public var bodyText: String? {
        guard let data = bodyData else { return nil }
        return String(data: data, encoding: .utf8)
    }

    /// The body decoded as `application/x-www-form-urlencoded` items (`+` is read as a space), in order;
    /// empty when there is no body.
    public var formItems: [URLQueryItem] {
        guard let text = bodyText, !text.isEmpty else { return [] }
        var components = URLComponents()
        components.percentEncodedQuery = text.replacingOccurrences(of: "+", with: "%20")
        return components.queryItems ?? []
    }

    /// Decodes the JSON body as `type`.
    ///
    /// ```swift
    /// #expect(try recorder.requests[0].decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a plain `JSONDecoder` by default.
    /// - Returns: The decoded body.
    /// - Throws: ``MockTransportError`` when the request has no body, or the decoder's error.
    public func decodedBody<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        guard let data = bodyData else {
            throw MockTransportError(message: "\(method) \(path) has no body to decode as \(T.self)")
        }
        return try decoder.decode(T.self, from: data)
    }

    /// A one-line description with secrets redacted, for messages: `POST /users?x=1`.
    var summary: String {
        guard let url = urlRequest.url else { return "\(method) <no URL>" }
        var text = "\(method) \(path)"
        if let query = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedQuery, !query.isEmpty {
            let redacted = Redaction.redactedURL(URL(string: "http://h/?" + query) ?? url)
            text += redacted.firstIndex(of: "?").map { String(redacted[$0...]) } ?? ""
        }
        return text
    }

    /// The header fields with secrets redacted, sorted by name, for messages.
    var redactedHeaderSummary: String {
        let headers = Redaction.redactedHeaders(urlRequest.allHTTPHeaderFields ?? [:])
        return headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { "\($0.key): \($0.value)" }
            .joined(separator: ", ")
    }
}

/// A request as a route's handler sees it: the `URLRequest`, the path parameters the route's pattern
/// captured, and how many calls the route had before this one.
///
/// ```swift
/// MockRoute.get("/users/:id") { request in
///     .json(User(id: request.parameters["id"]!, name: "Ada"))
/// }
/// ```
public struct MockRequest: InspectableRequest, Sendable {
    /// The request as the transport received it.
    public let urlRequest: URLRequest
    /// The values of the pattern's `:name` segments, by name, percent-decoded.
    public let parameters: [String: String]
    /// How many calls the route (or, outside routes, the mock) answered before this one: 0 for the first.
    public let callIndex: Int

    /// Creates a request for a handler.
    ///
    /// - Parameters:
    ///   - urlRequest: The request.
    ///   - parameters: Captured path parameters.
    ///   - callIndex: How many calls came before this one.
    public init(_ urlRequest: URLRequest, parameters: [String: String] = [:], callIndex: Int = 0) {
        self.urlRequest = urlRequest
        self.parameters = parameters
        self.callIndex = callIndex
    }
}
