import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A canned HTTP response for ``MockTransport``.
public struct MockResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The header fields.
    ///   - body: The body.
    public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `200 OK` with an empty body.
    public static let ok = MockResponse(status: 200)
    /// `204 No Content`.
    public static let noContent = MockResponse(status: 204)
    /// `500 Internal Server Error` with an empty body.
    public static let serverError = MockResponse(status: 500)

    /// A response with the given status and an optional text body.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - body: A UTF-8 body.
    ///   - headers: The header fields.
    /// - Returns: The response.
    public static func status(_ status: Int, body: String = "", headers: [String: String] = [:]) -> MockResponse {
        MockResponse(status: status, headers: headers, body: Data(body.utf8))
    }

    /// A JSON response encoded from `value`.
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added.
    /// - Returns: The response.
    public static func json(
        _ value: some Encodable,
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> MockResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a test fixture fails only for a programming error in the test itself.
        // swift-format-ignore: NeverUseForceTry
        let body = try! encoder.encode(value)
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return MockResponse(status: status, headers: headers, body: body)
    }

    /// A JSON response from a JSON string.
    ///
    /// - Parameters:
    ///   - json: The JSON text.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added.
    /// - Returns: The response.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> MockResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return MockResponse(status: status, headers: headers, body: Data(json.utf8))
    }

    /// A plain-text response.
    ///
    /// - Parameters:
    ///   - text: The body.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: text/plain; charset=utf-8` is added.
    /// - Returns: The response.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> MockResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "text/plain; charset=utf-8"
        return MockResponse(status: status, headers: headers, body: Data(text.utf8))
    }

    /// `503 Service Unavailable`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    /// - Returns: The response.
    public static func serviceUnavailable(retryAfter: Duration? = nil) -> MockResponse {
        MockResponse(status: 503, headers: retryAfterHeader(retryAfter))
    }

    /// `429 Too Many Requests`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    /// - Returns: The response.
    public static func tooManyRequests(retryAfter: Duration? = nil) -> MockResponse {
        MockResponse(status: 429, headers: retryAfterHeader(retryAfter))
    }

    /// Returns a copy with the header field `name` set to `value`.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value.
    /// - Returns: The changed response.
    public func header(_ name: String, _ value: String) -> MockResponse {
        var copy = self
        copy.headers[name] = value
        return copy
    }

    /// The `Retry-After` value for `delay`: whole seconds, rounded up, never negative.
    static func retryAfterSeconds(_ delay: Duration) -> Int {
        let (seconds, attoseconds) = delay.components
        if seconds < 0 { return 0 }
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }

    private static func retryAfterHeader(_ delay: Duration?) -> [String: String] {
        guard let delay else { return [:] }
        return ["Retry-After": String(retryAfterSeconds(delay))]
    }

    /// Makes the `HTTPURLResponse` for `request`.
    ///
    /// - Parameter request: The request being answered.
    /// - Returns: The response and its body.
    public func httpResponse(for request: URLRequest) -> (Data, HTTPURLResponse) {
        let url = request.url ?? URL(string: "http://127.0.0.1/")!
        // HTTPURLResponse's initializer only fails for an invalid HTTP version, which is fixed here.
        // swift-format-ignore: NeverForceUnwrap
        let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
        return (body, response)
    }
}
