public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An in-memory server that accepts one `Authorization` value and answers 401 to anything else.
public struct TokenCheckingTransport: Transport {
    let accepted: String
    let onRejection: @Sendable () -> Void
    let data = Data(Fixtures.body.utf8)
    let ok = HTTPURLResponse(url: Fixtures.url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil)!
    let unauthorized = HTTPURLResponse(
        url: Fixtures.url,
        statusCode: 401,
        httpVersion: "HTTP/1.1",
        headerFields: ["WWW-Authenticate": "Bearer"]
    )!

    /// Creates the server.
    ///
    /// - Parameters:
    ///   - accepted: The one `Authorization` value answered with `200 OK`.
    ///   - onRejection: Called for each request answered with `401`.
    public init(accepting accepted: String, onRejection: @escaping @Sendable () -> Void) {
        self.accepted = accepted
        self.onRejection = onRejection
    }

    /// Answers `200 OK` with a small body to the accepted credential, `401` to any other.
    ///
    /// - Parameter request: The request.
    /// - Returns: The body and the response.
    /// - Throws: Never.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        if request.value(forHTTPHeaderField: "Authorization") == accepted {
            return (data, ok)
        }
        onRejection()
        return (Data(), unauthorized)
    }
}
