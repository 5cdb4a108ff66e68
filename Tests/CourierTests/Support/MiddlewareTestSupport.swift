import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client in front of `transport` with `middleware`, outermost first.
func makeClient(_ transport: any Transport, _ middleware: [Middleware]) -> Client {
    Client(baseURL: exampleBaseURL, transport: transport, middleware: middleware)
}

/// A middleware that records whether a request got past the middleware in front of it.
func reachedMarker(_ reached: Locked<Int>) -> Middleware {
    Middleware(name: "marker") { request, next in
        reached.withLock { $0 += 1 }
        return try await next(request)
    }
}

/// Strings that stand for credentials in the secret-leak tests; none may appear in any description.
let secretFragments = [
    "s3cr3t-bearer-token", "cookie-session-value", "set-cookie-secret", "proxy-secret", "url-password",
    "query-token-value", "body-access-token", "body-bearer-token",
]

/// Fails the test if `text` contains any of ``secretFragments``.
func expectNoSecrets(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for secret in secretFragments {
        #expect(!text.contains(secret), "\(secret) leaked into: \(text)", sourceLocation: sourceLocation)
    }
}

/// A request that carries every kind of credential the redaction tests look for.
func secretLadenRequest() -> URLRequest {
    var request = URLRequest(
        url: URL(
            string:
                "https://alice:url-password@api.example.test/v1/me?token=query-token-value&access_token=query-token-value&page=1"
        )!
    )
    request.httpMethod = "POST"
    request.setValue("Bearer s3cr3t-bearer-token", forHTTPHeaderField: "Authorization")
    request.setValue("session=cookie-session-value", forHTTPHeaderField: "Cookie")
    request.setValue("Basic proxy-secret", forHTTPHeaderField: "Proxy-Authorization")
    request.setValue("courier-tests", forHTTPHeaderField: "User-Agent")
    request.httpBody = Data(#"{"access_token":"body-access-token"}"#.utf8)
    return request
}

/// A response body and headers that carry credentials.
let secretLadenResponseBody = #"{"access_token":"body-access-token","note":"use Bearer body-bearer-token"}"#
let secretLadenResponseHeaders = ["Set-Cookie": "id=set-cookie-secret; HttpOnly", "X-Trace": "abc"]
