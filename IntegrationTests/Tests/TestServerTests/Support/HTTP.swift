import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plain `URLSession` calls for the server's tests: one session that follows redirects and one
/// that hands back the 3xx itself.
enum HTTP {
    /// Follows redirects, as `URLSession` does by default.
    static let following = URLSession(configuration: configuration)

    /// Returns every 3xx response as it is.
    static let notFollowing = URLSession(
        configuration: configuration,
        delegate: RefusingRedirects(),
        delegateQueue: nil
    )

    /// A backstop for one request; tests also carry a `.timeLimit`.
    static let requestTimeout: TimeInterval = 120

    /// An ephemeral configuration whose request timeout is ``requestTimeout`` too: with the default 60 seconds,
    /// requests under the thread sanitizer timed out at 60 seconds although their own timeout was longer.
    private static var configuration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = requestTimeout
        return configuration
    }

    /// Sends a request and returns the body and the response.
    static func send(
        _ url: URL,
        method: String = "GET",
        headers: [(String, String)] = [],
        body: Data? = nil,
        followRedirects: Bool = false
    ) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: url, timeoutInterval: Self.requestTimeout)
        request.httpMethod = method
        for (name, value) in headers {
            request.addValue(value, forHTTPHeaderField: name)
        }
        request.httpBody = body
        let session = followRedirects ? Self.following : Self.notFollowing
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (data, http)
    }

    /// Sends a request and decodes the JSON body.
    static func json<Body: Decodable>(
        _ type: Body.Type,
        _ url: URL,
        method: String = "GET",
        headers: [(String, String)] = [],
        body: Data? = nil,
        followRedirects: Bool = false,
        expectStatus status: Int = 200,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Body {
        let (data, response) = try await Self.send(
            url,
            method: method,
            headers: headers,
            body: body,
            followRedirects: followRedirects
        )
        #expect(response.statusCode == status, sourceLocation: sourceLocation)
        #expect(
            response.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/json") == true,
            sourceLocation: sourceLocation
        )
        return try JSONDecoder().decode(Body.self, from: data)
    }
}

/// A session delegate that declines every redirect, so `data(for:)` returns the 3xx.
private final class RefusingRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
