import Foundation
import HTTPTypes
import Hummingbird

extension TestRouter {
    /// The realm the routes without `:realm` (`/auth/token`, `/protected`, …) use.
    static let defaultRealm = "default"

    /// `/auth/:realm/{token,expire,stats,protected,protected-403}`, and the same without the realm
    /// (`/auth/token`, `/auth/expire`, `/auth/stats`, `/protected`, `/protected-403`) for the
    /// default realm.
    static func addAuthRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        let realm: @Sendable (BasicRequestContext) -> String = { context in
            context.parameters.get("realm") ?? defaultRealm
        }
        for prefix in ["auth/:realm", "auth"] {
            router.post("\(prefix)/token") { request, context in
                try await Self.token(request, realm: realm(context), state: state)
            }
            router.post("\(prefix)/expire") { _, context in
                let expired = await state.expireToken(realm: realm(context))
                return try Response.json(["expired": expired])
            }
            router.get("\(prefix)/stats") { _, context in
                try Response.json(await state.authStats(realm: realm(context)))
            }
        }
        router.get("basic-auth/:user/:password") { request, context in
            try Self.basicAuth(request, context: context)
        }
        for method in Self.allMethods {
            router.on("challenge/:scheme", method: method) { _, context in
                try Self.challenge(context.parameters.get("scheme") ?? "")
            }
        }
        for prefix in ["auth/:realm/", ""] {
            router.get("\(prefix)protected") { request, context in
                try await Self.protected(request, realm: realm(context), state: state, rejectWith403: false)
            }
            router.get("\(prefix)protected-403") { request, context in
                try await Self.protected(request, realm: realm(context), state: state, rejectWith403: true)
            }
        }
    }

    /// Issues a token: `?expiresIn=SECONDS` (default 3600; 0 issues a token that is already
    /// expired), `?delayMs=` to answer slowly, `?fail=STATUS` to answer that status and issue
    /// nothing.
    private static func token(_ request: Request, realm: String, state: ServerState) async throws -> Response {
        let query = QueryItems(request.uri.query)
        guard let expiresIn = Int(query["expiresIn"] ?? "3600"), expiresIn >= 0 else {
            return Response.badRequest("expiresIn must be whole seconds")
        }
        guard let delay = Self.milliseconds(query["delayMs"]) else {
            return Response.badRequest("delayMs must be 0...\(maximumWaitMilliseconds)")
        }
        if delay > 0 {
            try await Task.sleep(for: .milliseconds(delay))
        }
        if let fail = query["fail"] {
            guard let code = Int(fail), (400...599).contains(code) else {
                return Response.badRequest("fail must be 400...599")
            }
            await state.recordFailedTokenRequest(realm: realm)
            return try Response.json(
                ErrorResponse(reason: "Token issuance failed on request."),
                status: HTTPResponse.Status(code: code)
            )
        }
        let token = await state.issueToken(realm: realm, expiresIn: .seconds(expiresIn))
        return try Response.json(TokenResponse(token: token, expiresIn: expiresIn))
    }

    private static func protected(
        _ request: Request,
        realm: String,
        state: ServerState,
        rejectWith403: Bool
    ) async throws -> Response {
        let token = Self.bearerToken(request.headers[.authorization])
        guard let rejection = await state.checkToken(token, realm: realm) else {
            return try Response.json(ProtectedResponse(realm: realm))
        }
        if rejectWith403 {
            return try Response.json(ErrorResponse(code: 999, reason: "Invalid Token."), status: .forbidden)
        }
        let reason: String
        switch rejection {
        case .missing: reason = "Missing bearer token."
        case .notCurrent: reason = "Invalid token."
        case .expired: reason = "Expired token."
        }
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"Bearer realm="\#(realm)", error="invalid_token""#
        return try Response.json(ErrorResponse(reason: reason), status: .unauthorized, headers: headers)
    }

    /// The realm of the Basic challenges (`/basic-auth/…`, `/challenge/basic`), as httpbin names it.
    static let basicRealm = "Fake Realm"

    /// `200 {"authenticated":true,"user":USER}` when the request carries `Authorization: Basic` with
    /// `USER:PASSWORD`; otherwise `401` with `WWW-Authenticate: Basic realm="Fake Realm"`.
    private static func basicAuth(_ request: Request, context: BasicRequestContext) throws -> Response {
        let user = context.parameters.get("user") ?? ""
        let password = context.parameters.get("password") ?? ""
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        guard request.headers[.authorization] == expected else {
            return try Self.challenge("basic")
        }
        return try Response.json(BasicAuthResponse(user: user))
    }

    /// A `401` asking for credentials of `scheme` (`basic`, `digest`, `negotiate`), or for `proxy` a
    /// `407` with `Proxy-Authenticate: Basic`; the body is `{"error":true,"reason":"…"}`.
    private static func challenge(_ scheme: String) throws -> Response {
        var headers = HTTPFields()
        var status = HTTPResponse.Status.unauthorized
        switch scheme {
        case "basic":
            headers[.wwwAuthenticate] = #"Basic realm="\#(basicRealm)""#
        case "digest":
            headers[.wwwAuthenticate] =
                #"Digest realm="\#(basicRealm)", qop="auth", nonce="6fa8a1cbd2a4e1c0", opaque="0d4b""#
        case "negotiate":
            headers[.wwwAuthenticate] = "Negotiate"
        case "proxy":
            status = .proxyAuthenticationRequired
            headers[.proxyAuthenticate] = #"Basic realm="\#(basicRealm)""#
        default:
            return Response.badRequest("scheme must be basic, digest, negotiate or proxy")
        }
        return try Response.json(ErrorResponse(reason: "Credentials required."), status: status, headers: headers)
    }

    /// The token of an `Authorization: Bearer TOKEN` header; the scheme is case-insensitive.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }
}
