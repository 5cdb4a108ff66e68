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
