import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Adds a fixed credential to every request: `Authorization: Bearer <token>` by default.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.retry(.default), .authenticating(token: apiToken), .validatingStatus()]
    /// )
    /// ```
    ///
    /// The header value is built and checked once, here. An empty token, or one containing CR, LF or NUL,
    /// makes every request fail with ``CourierError/Code/invalidRequest`` before anything is sent; no
    /// error message or log record contains the token (it is registered with ``Redaction/registerSecret(_:)``,
    /// so it is removed even from an underlying error's text that quotes it). The middleware replaces any value
    /// the request already has in that header. For tokens that expire, see
    /// ``authenticating(scheme:tokenProvider:)``.
    ///
    /// The credential never reaches another origin, whatever header carries it: a
    /// ``followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)`` layer inside removes that header on
    /// the first hop to another origin, and with the redirect layer outside, no credential is added to such a
    /// hop (see ``RedirectContext``).
    ///
    /// - Parameters:
    ///   - token: The credential sent with every request.
    ///   - scheme: Which header carries it and what comes before it; ``AuthorizationScheme/bearer`` by
    ///     default.
    /// - Returns: A middleware named `"authenticating"`.
    public static func authenticating(token: String, scheme: AuthorizationScheme = .bearer) -> Middleware {
        let name = "authenticating"
        Redaction.registerSecret(token)
        let value: String
        do {
            value = try scheme.headerValue(for: token)
        } catch let error as CourierError {
            return .failing(name: name, message: error.message)
        } catch {
            return .failing(name: name, message: "the credential is not valid")
        }
        let header = scheme.headerName
        return Middleware(name: name, waitsOnlyWithinDeadline: true) { request, next in
            // Never put the credential back on a hop a redirect middleware took to another origin.
            guard RedirectContext.mayAttachCredentials else { return try await next(request) }
            var request = request
            request.setValue(value, forHTTPHeaderField: header)
            // A redirect layer inside learns which header to remove on a hop to another origin.
            return try await AttachedCredential.attaching(header).bound { try await next(request) }
        }
    }

    /// Adds a credential that `tokenProvider` supplies for each request (from a keychain, a secrets
    /// manager, or a cache of your own).
    ///
    /// ```swift
    /// let tokens = TokenStore()      // your actor
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.authenticating { try await tokens.current() }, .validatingStatus()]
    /// )
    /// ```
    ///
    /// The provider is called once per pass through the middleware (so a retry outside it asks again).
    /// What it throws is passed on unchanged (a `CancellationError` stays one) and nothing is sent. An
    /// empty token, or one containing CR, LF or NUL, fails with ``CourierError/Code/invalidRequest``;
    /// no error message or log record contains the token: each one is registered with
    /// ``Redaction/registerSecret(_:)`` (about 0.2 µs when it is the same as before). As with a fixed token,
    /// the credential never reaches another origin through a redirect. For a credential that the server can
    /// reject and that must
    /// then be refreshed exactly once for many concurrent requests, use a `TokenRefresher`.
    ///
    /// - Parameters:
    ///   - scheme: Which header carries the credential and what comes before it;
    ///     ``AuthorizationScheme/bearer`` by default.
    ///   - tokenProvider: Returns the current credential.
    /// - Returns: A middleware named `"authenticating"`.
    public static func authenticating(
        scheme: AuthorizationScheme = .bearer,
        tokenProvider: @escaping @Sendable () async throws -> String
    ) -> Middleware {
        let name = "authenticating"
        if let problem = scheme.problem {
            return .failing(name: name, message: problem)
        }
        return Middleware(name: name) { request, next in
            guard RedirectContext.mayAttachCredentials else { return try await next(request) }
            let token = try await tokenProvider()
            Redaction.registerSecret(token)
            var request = request
            try scheme.authorize(&request, with: token)
            return try await AttachedCredential.attaching(scheme.headerName).bound { try await next(request) }
        }
    }
}
