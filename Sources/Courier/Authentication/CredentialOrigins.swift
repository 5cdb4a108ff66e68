public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The origins an authenticating middleware sends its credential to: the client's base URL's origin by
/// default, and others only when you name them.
///
/// ```swift
/// let client = Client(
///     baseURL: URL(string: "https://api.example.com")!,
///     middleware: [
///         .authenticating(token: apiToken),                               // https://api.example.com only
///         .authenticating(
///             token: uploadToken,
///             scheme: .header("X-Upload-Key"),
///             origins: .baseURL(and: URL(string: "https://uploads.example.com")!)
///         ),
///     ]
/// )
/// let csv: Data = try await client.send(.get("https://cdn.example.net/report.csv?X-Amz-Signature=…"))
/// // sent without either credential: cdn.example.net is neither origin
/// ```
///
/// An origin is a scheme, a host and a port (RFC 6454), with `80` for `http` and `443` for `https` when the
/// URL names none; hosts are compared ignoring case. So `http://api.example.com`, `https://api.example.com:8443`
/// and `https://eu.api.example.com` are each another origin than `https://api.example.com`. Only a URL's origin
/// counts: `.only(URL(string: "https://api.example.com/v2")!)` allows all of `https://api.example.com`.
///
/// A request to any other origin goes out as it is, without the credential, and its response is passed on
/// as it is: a `401` from there is not the credential's fault and refreshes nothing. A redirect never carries
/// a credential to another origin either, even to one named here (see ``RedirectContext``).
///
/// **A client without a base URL** has no origin to send ``baseURL`` credentials to: every request through
/// such a middleware fails with ``CourierError/Code/invalidRequest`` before anything is sent, and the message
/// says to name the origins with ``only(_:)-(URL...)``. Failing loudly, rather than sending the credential everywhere
/// or silently nowhere, makes the missing decision visible at the first request.
///
/// A URL without a scheme or a host (`URL(string: "api.example.com")`) names no origin: every request through
/// a middleware given one fails with ``CourierError/Code/invalidRequest``.
///
/// Your own middleware can apply the same rule with ``allows(_:through:)``.
public struct CredentialOrigins: Sendable, Hashable {
    /// Whether the client's base URL's origin is one of them.
    let includesBaseURL: Bool
    /// The origins named explicitly.
    let named: [HTTPOrigin]
    /// Why the origins are unusable, or `nil`.
    let problem: String?

    private init(includesBaseURL: Bool, urls: [URL]) {
        self.includesBaseURL = includesBaseURL
        var named: [HTTPOrigin] = []
        var problem: String?
        for url in urls {
            guard let origin = HTTPOrigin(url) else {
                problem = "a credential origin needs a scheme and a host: \(Redaction.redactedURL(url)) has none"
                continue
            }
            if !named.contains(origin) { named.append(origin) }
        }
        self.named = named
        self.problem = problem
    }

    /// The origin of the client's ``Client/Configuration/baseURL``, and no other: the default.
    public static let baseURL = CredentialOrigins(includesBaseURL: true, urls: [])

    /// The origin of the client's base URL and the origins of `urls`.
    ///
    /// - Parameter urls: URLs whose origins may receive the credential too; their paths do not matter.
    public static func baseURL(and urls: URL...) -> CredentialOrigins {
        CredentialOrigins(includesBaseURL: true, urls: urls)
    }

    /// The origins of `urls` and no other, whatever the client's base URL is (or for a client without one).
    ///
    /// - Parameter urls: URLs whose origins receive the credential; their paths do not matter.
    public static func only(_ urls: URL...) -> CredentialOrigins {
        CredentialOrigins(includesBaseURL: false, urls: urls)
    }

    /// The same as ``only(_:)-(URL...)``, from an array.
    public static func only(_ urls: [URL]) -> CredentialOrigins {
        CredentialOrigins(includesBaseURL: false, urls: urls)
    }

    /// Whether a credential meant for these origins may be added to `request`, which your middleware is about
    /// to pass to `next`: its URL has one of these origins, and it is not a redirect hop after the chain left
    /// the origin of its first request (``RedirectContext/mayAttachCredentials``).
    ///
    /// ```swift
    /// Middleware(name: "tenant-key") { request, next in
    ///     guard try CredentialOrigins.baseURL.allows(request, through: next) else { return try await next(request) }
    ///     var request = request
    ///     request.setValue(tenantKey, forHTTPHeaderField: "X-Tenant-Key")
    ///     return try await RedirectContext.sendingCredential(in: "X-Tenant-Key") { try await next(request) }
    /// }
    /// ```
    ///
    /// It compares the request's scheme, host and port with the origins, ignoring case, without allocating
    /// for hosts up to 15 bytes; the base URL's origin is worked out once per client configuration.
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` when these origins include the base URL and the client
    ///   has none, or a URL given for them names no origin.
    public func allows(_ request: URLRequest, through next: Next) throws -> Bool {
        if let problem { throw CourierError.invalidRequest(problem, request: request) }
        let base = next.baseOrigin
        if includesBaseURL && base == nil {
            throw CourierError.invalidRequest(
                "the credential is for the base URL's origin, and the client has no base URL: give it one, or name "
                    + "the origins the credential belongs to with origins: .only(…)",
                request: request
            )
        }
        guard RedirectContext.mayAttachCredentials, let url = request.url else { return false }
        if includesBaseURL, let base, base.matches(url) { return true }
        return named.contains { $0.matches(url) }
    }
}
