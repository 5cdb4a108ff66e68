import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Adds the current token of `refresher` to every request, and when the server rejects it, refreshes
    /// it (once for all concurrent rejections) and retries the request once with the new token.
    ///
    /// ```swift
    /// let auth = TokenRefresher(token: .init(stored, expiresIn: .seconds(3600))) { _ in try await signIn() }
    /// let client = Client(
    ///     baseURL: base,
    ///     middleware: [.counting(counter), .timeout(.seconds(10)), .retry(.default),
    ///                  .authenticating(with: auth), .validatingStatus()]
    /// )
    /// ```
    ///
    /// - A token due for an early refresh (see ``TokenRefresher/leeway``) is refreshed **before** sending. If that
    ///   refresh fails while the token has not expired yet, the request is sent with it all the same: an outage
    ///   of the token server fails requests only once the token has really expired.
    /// - A rejection (see ``AuthenticationFailure``; 401 by default) is recognised whether it comes back as
    ///   a response or as a thrown ``CourierError`` with a status, so status validation may sit inside this
    ///   middleware. A rejection of a request that did not carry the token — from another origin, or from
    ///   any hop after a redirect layer inside removed the token on the way to another origin — is not the
    ///   token's fault: it is passed on as it is, and nothing is refreshed.
    /// - A body Courier streams (``RequestBody/file(_:contentType:)``, `.stream`, `.multipart`) is sent again
    ///   from its first byte on the restart. A request whose body is a one-shot `httpBodyStream` (or a form
    ///   with a one-shot stream part) cannot be restarted: its rejection fails with
    ///   ``CourierError/Code/bodyNotReplayable`` (carrying the rejection's status and body) and nothing is
    ///   refreshed.
    /// - A request that was rejected with an older token than the current one retries with the current one
    ///   without refreshing.
    /// - Each request is retried **at most once**. If the refreshed token is rejected too, the request
    ///   fails with ``CourierError/Code/authenticationRejected`` (carrying the last status and body).
    /// - Requests sent from inside the refresher's `refresh` closure pass through untouched, so `refresh`
    ///   can send its token request through the same client without deadlocking.
    /// - The token goes only to `origins`: by default the client's base URL's origin (see ``CredentialOrigins``).
    ///   A request to another origin (a pre-signed link, a CDN) goes out without it, and its `401` is passed on
    ///   and refreshes nothing.
    /// - On a redirect hop that has left the first origin (``RedirectContext/mayAttachCredentials`` is
    ///   `false`, when `.followingRedirects` is listed outside this middleware) no credential is added and
    ///   nothing is refreshed.
    ///
    /// **Where to put it**: inside `.retry` (every retried attempt picks up the current token) and the
    /// whole-call `.timeout` (which also bounds the wait for a refresh); outside a per-attempt timeout,
    /// status validation and `.followingRedirects` (so the token is added once, and the redirect layer can
    /// strip it on a hop to a foreign origin).
    ///
    /// On the success path this costs a synchronous read of the current token, building the header value,
    /// and setting one header; only rejections and refreshes await the refresher actor.
    ///
    /// - Parameters:
    ///   - refresher: Holds the token and refreshes it.
    ///   - scheme: Which header carries the token and what comes before it: ``AuthorizationScheme/bearer``
    ///     (`Authorization: Bearer <token>`) by default, or for example `.header("X-API-Key")` for the bare
    ///     token in another header. An invalid header name or scheme makes every request fail with
    ///     ``CourierError/Code/invalidRequest`` before anything is sent.
    ///   - failure: Which responses mean the token was rejected.
    ///   - origins: Where the token may go; ``CredentialOrigins/baseURL`` by default.
    /// - Returns: The middleware, named `"authenticating"`.
    public static func authenticating(
        with refresher: TokenRefresher,
        scheme: AuthorizationScheme = .bearer,
        failure: AuthenticationFailure = .unauthorized,
        origins: CredentialOrigins = .baseURL
    ) -> Middleware {
        let name = "authenticating"
        if let problem = scheme.problem ?? origins.problem {
            return .failing(name: name, message: problem)
        }
        let authenticator = RefreshingAuthenticator(
            refresher: refresher,
            header: scheme.headerName,
            prefix: scheme.scheme.map { $0 + " " } ?? "",
            failure: failure,
            origins: origins
        )
        return Middleware(name: name) { request, next in
            // The restart after a refresh is the same call: an idempotency key given inside keeps its value.
            try await IdempotencyKeyMemory.remembering(for: request) {
                try await authenticator.send(request, next: next)
            }
        }
    }
}

/// The state of one `.authenticating(with:)` middleware, built once in the factory.
private struct RefreshingAuthenticator: Sendable {
    let refresher: TokenRefresher
    let refresherID: ObjectIdentifier
    let header: String
    let prefix: String
    let failure: AuthenticationFailure
    let origins: CredentialOrigins

    init(
        refresher: TokenRefresher,
        header: String,
        prefix: String,
        failure: AuthenticationFailure,
        origins: CredentialOrigins
    ) {
        self.refresher = refresher
        self.refresherID = ObjectIdentifier(refresher)
        self.header = header
        self.prefix = prefix
        self.failure = failure
        self.origins = origins
    }

    /// What came back from one attempt.
    private enum Attempt {
        case accepted((Data, HTTPURLResponse))
        case rejectedResponse(Data, HTTPURLResponse)
        case rejectedError(CourierError)
    }

    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        // The refresher's own token request: no credential, no waiting for a refresh, no retry.
        if TokenRefresher.isRefreshing(refresherID) {
            return try await next(request)
        }
        // Another origin than the token's, or a redirect hop (with `.followingRedirects` listed outside) that left
        // the first origin: no credential, and its 401 says nothing about the token.
        guard try origins.allows(request, through: next) else {
            return try await next(request)
        }
        let credential = try await refresher.credentialToSend(refresher.credential)
        let rejection: (response: HTTPURLResponse?, body: Data?, error: CourierError?)
        switch try await attempt(request, with: credential, next: next) {
        case .accepted(let result):
            return result
        case .rejectedResponse(let body, let response):
            rejection = (response, body, nil)
        case .rejectedError(let error):
            rejection = (nil, nil, error)
        }
        // Only a request whose body can be sent again is restarted; nothing is refreshed for one that cannot.
        let again = try Replay.again(
            request,
            for: "the restart after the credential was rejected",
            response: rejection.response,
            body: rejection.body,
            underlying: rejection.error
        )
        // The stale-token race is settled without awaiting the actor when the token has already changed.
        let latest = refresher.credential
        let fresh = latest.version > credential.version ? latest : try await refresher.newerCredential(than: credential)
        switch try await attempt(again, with: fresh, next: next) {
        case .accepted(let result):
            return result
        case .rejectedResponse(let body, let response):
            throw CourierError(
                .authenticationRejected,
                message: "the server rejected the refreshed credential too",
                request: request,
                response: response,
                body: body
            )
        case .rejectedError(let rejection):
            var error = CourierError(
                .authenticationRejected,
                message: "the server rejected the refreshed credential too",
                request: request,
                underlying: rejection
            )
            error.statusCode = rejection.statusCode
            error.responseHeaders = rejection.responseHeaders
            error.responseBody = rejection.responseBody
            error.response = rejection.response
            throw error
        }
    }

    /// Sends `request` with `credential` and tells whether the server rejected the credential: a response
    /// (or a thrown ``CourierError``) that `failure` matches, from a request that carried the credential to
    /// the origin it was meant for. A rejection after a redirect layer inside removed the credential (the
    /// chain went to another origin), or from another origin, is passed on as it is: that server's opinion
    /// of a credential it never received says nothing about the credential.
    private func attempt(
        _ request: URLRequest,
        with credential: TokenRefresher.Credential,
        next: Next
    ) async throws -> Attempt {
        var authenticated = request
        authenticated.setValue(prefix + credential.value, forHTTPHeaderField: header)
        let attached = AttachedCredential.attaching(header)
        do {
            let (body, response) = try await attached.bound { try await next(authenticated) }
            guard failure.matches(response, body: body), !attached.wasRemoved,
                Self.isSameOrigin(request.url, response.url)
            else {
                return .accepted((body, response))
            }
            return .rejectedResponse(body, response)
        } catch let error as CourierError where failure.matches(error) {
            let url = error.response?.url ?? error.redactedURL.flatMap { URL(string: $0) }
            guard !attached.wasRemoved, Self.isSameOrigin(request.url, url) else { throw error }
            return .rejectedError(error)
        }
    }

    /// Whether `other` has the origin of `url`; `true` when either is unknown.
    private static func isSameOrigin(_ url: URL?, _ other: URL?) -> Bool {
        guard let url, let other else { return true }
        return RedirectContext.isSameOrigin(url, other)
    }
}
