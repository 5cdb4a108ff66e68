import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a credential is written into a request: the header that carries it and the scheme before it.
///
/// ```swift
/// .authenticating(token: apiToken)                                   // Authorization: Bearer <token>
/// .authenticating(token: apiToken, scheme: .token)                   // Authorization: Token <token>
/// .authenticating(token: apiKey, scheme: .header("X-API-Key"))       // X-API-Key: <token>
/// .authenticating(token: apiKey, scheme: AuthorizationScheme(header: "Authorization", scheme: "SSWS"))
/// ```
///
/// A header name that is not an HTTP token, a scheme that is not one, or a token that is empty or contains
/// CR, LF or NUL is reported as ``CourierError/Code/invalidRequest`` when a request is sent, and nothing
/// reaches the transport. No message ever contains the token.
public struct AuthorizationScheme: Sendable, Hashable {
    /// The header that carries the credential, `Authorization` by default.
    public let headerName: String
    /// The authentication scheme written before the token (`Bearer`), or `nil` to send the token alone.
    public let scheme: String?
    /// Why the header name or scheme is unusable, or `nil` when they are fine.
    let problem: String?

    /// - Parameters:
    ///   - header: The header that carries the credential.
    ///   - scheme: The scheme written before the token, or `nil` for the token alone.
    public init(header: String = "Authorization", scheme: String?) {
        self.headerName = header
        self.scheme = scheme
        self.problem = Self.problem(header: header, scheme: scheme)
    }

    /// `Authorization: Bearer <token>` (RFC 6750).
    public static let bearer = AuthorizationScheme(scheme: "Bearer")

    /// `Authorization: Token <token>`, as some APIs expect.
    public static let token = AuthorizationScheme(scheme: "Token")

    /// The token alone in the header `name`, for API keys such as `X-API-Key: <token>`.
    public static func header(_ name: String) -> AuthorizationScheme {
        AuthorizationScheme(header: name, scheme: nil)
    }

    /// The header value for `token`, for example `Bearer abc`.
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` when the scheme or the token is unusable. The message
    ///   names the header, never the token.
    func headerValue(for token: String, request: URLRequest? = nil) throws -> String {
        if let problem {
            throw CourierError.invalidRequest(problem, request: request)
        }
        guard !token.isEmpty else {
            throw CourierError.invalidRequest(
                "the credential for header \(Redaction.quotedHeaderName(headerName)) is empty",
                request: request
            )
        }
        let value = scheme.map { "\($0) \(token)" } ?? token
        try RequestValidation.validateHeader(name: headerName, value: value, request: request)
        return value
    }

    /// Writes `token` into `request`, replacing any value the header had.
    ///
    /// Reusable by every middleware that authenticates (static tokens, providers, refreshers).
    ///
    /// - Throws: ``CourierError/Code/invalidRequest`` when the scheme or the token is unusable.
    func authorize(_ request: inout URLRequest, with token: String) throws {
        let value = try headerValue(for: token, request: request)
        request.setValue(value, forHTTPHeaderField: headerName)
    }

    private static func problem(header: String, scheme: String?) -> String? {
        do {
            try RequestValidation.validateHeader(name: header, value: "")
        } catch let error as CourierError {
            return error.message
        } catch {
            return "the header name \(Redaction.quotedHeaderName(header)) is not valid"
        }
        if let scheme, (try? RequestValidation.validateHeader(name: scheme, value: "")) == nil {
            return "the authentication scheme \(Redaction.quotedHeaderName(scheme)) is not a valid HTTP token"
        }
        return nil
    }
}
