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
    /// so it is removed even from an underlying error's text that quotes it, for as long as the middleware exists,
    /// whatever else is registered). The middleware replaces any value
    /// the request already has in that header. For tokens that expire, see
    /// ``authenticating(scheme:origins:tokenProvider:)``.
    ///
    /// The credential goes only to its `origins`: by default the client's base URL's origin (scheme, host and
    /// port). A request that names another origin (a pre-signed link, a file on a CDN) goes out without it; a
    /// client without a base URL must name the origins (see ``CredentialOrigins``). It never reaches another
    /// origin through a redirect either, whatever header carries it: a
    /// ``followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)`` layer inside removes that header on
    /// the first hop to another origin, and with the redirect layer outside, no credential is added to such a
    /// hop (see ``RedirectContext``).
    ///
    /// - Parameters:
    ///   - token: The credential sent with every request to `origins`.
    ///   - scheme: Which header carries it and what comes before it; ``AuthorizationScheme/bearer`` by
    ///     default.
    ///   - origins: Where the credential may go; ``CredentialOrigins/baseURL`` by default.
    /// - Returns: A middleware named `"authenticating"`.
    public static func authenticating(
        token: String,
        scheme: AuthorizationScheme = .bearer,
        origins: CredentialOrigins = .baseURL
    ) -> Middleware {
        let name = "authenticating"
        // Registered for as long as the middleware lives, however many other values are registered meanwhile.
        let pin = SecretPin(token)
        let value: String
        do {
            value = try scheme.headerValue(for: token)
        } catch let error as CourierError {
            return .failing(name: name, message: error.message)
        } catch {
            return .failing(name: name, message: "the credential is not valid")
        }
        if let problem = origins.problem {
            return .failing(name: name, message: problem)
        }
        let header = scheme.headerName
        // `setValue`'s work on the name and the value, done once (see FixedHeaderField).
        let field = FixedHeaderField(name: header, value: value)
        return Middleware(name: name, waitsOnlyWithinDeadline: true) { request, next in
            // Only to its origins, and never back on a hop a redirect middleware took to another origin.
            withExtendedLifetime(pin) {}
            guard try origins.allows(request, through: next) else { return try await next(request) }
            var request = request
            field.set(on: &request)
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
    /// ``Redaction/registerSecret(_:)``, and the 16 latest distinct tokens are kept for as long as the middleware
    /// exists, whatever else is registered (comparisons under a lock when the token is one of them). As with a fixed token,
    /// the credential goes only to its `origins` (the base URL's by default; see ``CredentialOrigins``): for a
    /// request elsewhere the provider is not called and nothing is added, and no redirect carries the
    /// credential to another origin. For a credential that the server can reject and that must then be
    /// refreshed exactly once for many concurrent requests, use a `TokenRefresher`.
    ///
    /// - Parameters:
    ///   - scheme: Which header carries the credential and what comes before it;
    ///     ``AuthorizationScheme/bearer`` by default.
    ///   - origins: Where the credential may go; ``CredentialOrigins/baseURL`` by default.
    ///   - tokenProvider: Returns the current credential.
    /// - Returns: A middleware named `"authenticating"`.
    public static func authenticating(
        scheme: AuthorizationScheme = .bearer,
        origins: CredentialOrigins = .baseURL,
        tokenProvider: @escaping @Sendable () async throws -> String
    ) -> Middleware {
        let name = "authenticating"
        if let problem = scheme.problem ?? origins.problem {
            return .failing(name: name, message: problem)
        }
        // The latest tokens (16 distinct: a few tenants', two during a rotation) stay registered while the
        // middleware lives (see SecretPin).
        let latest = RecentSecrets()
        return Middleware(name: name) { request, next in
            guard try origins.allows(request, through: next) else { return try await next(request) }
            let token = try await tokenProvider()
            latest.hold(token)
            var request = request
            try scheme.authorize(&request, with: token)
            return try await AttachedCredential.attaching(scheme.headerName).bound { try await next(request) }
        }
    }
}
