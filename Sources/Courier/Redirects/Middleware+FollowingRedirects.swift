extension Middleware {
    /// Follows HTTP redirects safely: credentials never travel to another origin.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .retry(.default),
    ///         .authenticating(token: apiToken),
    ///         .validatingStatus(),
    ///         .followingRedirects(max: 10, sensitiveHeaders: ["X-Tenant-Key"]),
    ///     ]
    /// )
    /// ```
    ///
    /// - `301`, `302` and `303` are followed with `GET` and no body (`HEAD` stays `HEAD`); `Content-Type`,
    ///   `Content-Length` and the other headers that describe a body are removed. `307` and `308` keep the
    ///   method and the body. No other status is a redirect (`304 Not Modified` is returned as it is).
    /// - A relative `Location` is resolved against the URL of the request that got it. A redirect
    ///   without a `Location`, or whose `Location` is not an `http` or `https` URL, is returned as it is. A
    ///   `307`/`308` sends a body Courier streams (``RequestBody/file(_:contentType:)``, `.stream`,
    ///   `.multipart`) again from its first byte; one whose body is a one-shot `httpBodyStream` (or a form with
    ///   a one-shot stream part) fails with ``CourierError/Code/bodyNotReplayable``: the stream cannot be sent
    ///   a second time.
    /// - When a hop changes the origin (scheme, host or port), `Host`, every credential header of
    ///   ``CredentialHeaders`` (`Authorization`, `Cookie`, `Proxy-Authorization`, `X-Api-Key`, names containing
    ///   `token` or `session`, and the names you registered), `sensitiveHeaders`, and every header an `.authenticating` middleware outside put its
    ///   credential in (or that your own middleware declared with ``RedirectContext/sendingCredential(in:_:)``)
    ///   are removed. Once removed they stay removed, even if a later hop comes back to the first origin.
    /// - A redirect from `https` to `http` fails with ``CourierError/Code/insecureRedirect`` unless
    ///   `allowsInsecureRedirects` is `true`. A redirect back to a URL already requested in the chain (with
    ///   the same method) fails with ``CourierError/Code/redirectLoop``; more than `max` redirects fail with
    ///   ``CourierError/Code/tooManyRedirects``. Each error carries the 3xx response that was refused.
    ///
    /// **Order.** List it last (innermost), after the authenticating middleware and after status
    /// validation: `… → retry → authenticating → timeout(per attempt) → validatingStatus → followingRedirects`.
    /// Then the credential is added once, to the first request, and stripped here on the first hop to
    /// another origin; status validation and a token refresh on `401` see the final response instead of the
    /// 3xx; and a per-attempt timeout covers the whole chain of hops.
    ///
    /// Listed the other way round, it stays safe with authenticating middleware that respects
    /// ``RedirectContext``: around every hop it sets ``RedirectContext/currentHop``, and
    /// ``RedirectContext/mayAttachCredentials`` is `false` once the chain has left its first origin, so such
    /// middleware adds no credential to those hops.
    ///
    /// `URLSessionTransport` never follows redirects itself (on Linux, `URLSession` would forward
    /// `Authorization` and `Cookie` to any origin); add this middleware to follow them.
    ///
    /// - Parameters:
    ///   - max: The most redirects followed for one request; the next one fails. `0` follows none and fails
    ///     on the first redirect.
    ///   - sensitiveHeaders: More header names (any case) to remove when the origin changes.
    ///   - allowsInsecureRedirects: Whether to follow a redirect from `https` to `http` (credentials are
    ///     removed all the same, since the origin changes).
    /// - Returns: The middleware, named `"redirects"`.
    public static func followingRedirects(
        max: Int = 10,
        sensitiveHeaders: Set<String> = [],
        allowsInsecureRedirects: Bool = false
    ) -> Middleware {
        let follower = RedirectFollower(
            maximum: max,
            sensitiveHeaders: sensitiveHeaders,
            allowsInsecureRedirects: allowsInsecureRedirects
        )
        return Middleware(name: "redirects", waitsOnlyWithinDeadline: true) { request, next in
            try await follower.send(request, next: next)
        }
    }
}
