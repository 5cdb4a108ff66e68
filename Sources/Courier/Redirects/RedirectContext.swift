public import Foundation

/// What middleware further in the chain learns about the redirect being followed: set by
/// ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)`` around every hop after
/// the first request, and `nil` otherwise.
///
/// Authentication middleware must consult ``mayAttachCredentials`` before it adds a credential, so that a
/// token is never put back on a request the redirect middleware has stripped, whichever order the two
/// are listed in. ``CredentialOrigins/allows(_:through:)`` checks it, and that the request goes to the
/// credential's origin (the client's base URL's by default):
///
/// ```swift
/// Middleware(name: "api-key") { request, next in
///     guard try CredentialOrigins.baseURL.allows(request, through: next) else { return try await next(request) }
///     var request = request
///     request.setValue(apiKey, forHTTPHeaderField: "X-Api-Key")
///     return try await next(request)
/// }
/// ```
///
/// A middleware that adds a credential must also say so with ``sendingCredential(in:_:)``, so that a redirect
/// layer inside it removes that header on a hop to another origin, whatever its name, and a caching or coalescing
/// layer outside it, which cannot see the credential, refuses to share the response:
///
/// ```swift
/// Middleware(name: "tenant-key") { request, next in
///     var request = request
///     request.setValue(tenantKey, forHTTPHeaderField: "X-Tenant-Key")
///     return try await RedirectContext.sendingCredential(in: "X-Tenant-Key") { try await next(request) }
/// }
/// ```
///
/// The built-in `.authenticating` middleware do both. An authenticating middleware that refreshes its
/// credential on `401` must also leave a foreign hop's `401` alone (pass the response on): the foreign
/// origin's opinion of a credential it never received says nothing about the credential.
public enum RedirectContext {
    /// The redirect hop being sent by the current task, or `nil` when the current request is not a redirect.
    @TaskLocal public static var currentHop: RedirectHop?

    /// Whether a credential may be attached to the request being sent now: `false` on every hop after a
    /// redirect chain has left the origin of its first request (even a hop that comes back to it), `true`
    /// otherwise.
    public static var mayAttachCredentials: Bool {
        currentHop.map { !$0.hasLeftOriginalOrigin } ?? true
    }

    /// Runs `operation` (your middleware's call of `next`) knowing that the request carries a credential in
    /// the header `name`: a ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)``
    /// layer inside removes that header from every hop once the chain has left the request's origin.
    ///
    /// It costs a task-local binding and a small allocation per call.
    ///
    /// - Parameters:
    ///   - name: The header your middleware put the credential in (any case).
    ///   - operation: What to run, typically `{ try await next(request) }`.
    public static func sendingCredential<Result>(
        in name: String,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        try await AttachedCredential.attaching(name).bound(operation)
    }

    /// Whether two URLs have the same origin: the same scheme and host (compared case-insensitively) and
    /// the same port, where a missing port is the scheme's default (80 for `http`, 443 for `https`).
    ///
    /// An authenticating middleware listed *outside* the redirect middleware can use it to tell whether
    /// a `401` came from the origin it sent its credential to: `response.url` is the URL of the last hop.
    ///
    /// - Returns: `true` when both have the same origin; `false` also when either has no scheme or host.
    public static func isSameOrigin(_ lhs: URL, _ rhs: URL) -> Bool {
        guard let left = HTTPOrigin(lhs), let right = HTTPOrigin(rhs) else { return false }
        return left == right
    }
}
