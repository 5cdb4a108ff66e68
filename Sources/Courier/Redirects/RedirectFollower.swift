import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The state and rules of ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)``,
/// built once when the middleware is made.
struct RedirectFollower: Sendable {
    /// The most redirects followed for one request.
    let maximum: Int
    /// Lower-cased names of the headers removed when the origin changes, besides every one of
    /// ``CredentialHeaders`` (asked at each hop, so a name registered later counts too).
    let strippedOnOriginChange: Set<String>
    /// Whether `https` → `http` is followed.
    let allowsInsecureRedirects: Bool

    /// Headers that describe a body; removed when a redirect drops the body.
    static let bodyHeaders: Set<String> = [
        "content-type", "content-length", "content-encoding", "content-language", "content-location",
        "transfer-encoding", "expect",
    ]

    /// Headers bound to the origin they were set for (credentials, and `Host`), always removed when it changes.
    static let originBoundHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization", "host"]

    init(maximum: Int, sensitiveHeaders: Set<String>, allowsInsecureRedirects: Bool) {
        precondition(maximum >= 0, "followingRedirects(max:) needs a number of redirects of 0 or more")
        self.maximum = maximum
        self.strippedOnOriginChange = Self.originBoundHeaders.union(sensitiveHeaders.map { $0.lowercased() })
        self.allowsInsecureRedirects = allowsInsecureRedirects
    }

    /// Whether `status` asks the client to follow `Location`.
    static func isRedirect(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    func send(_ request: URLRequest, next: Next) async throws -> (Data, HTTPURLResponse) {
        if let attached = AttachedCredential.current {
            for credential in attached.all { credential.setRemoved(false) }
        }
        // A request that starts a chain is never a hop of an enclosing chain (a request sent from within
        // another client's hop, say).
        let first =
            RedirectContext.currentHop == nil
            ? try await next(request)
            : try await RedirectContext.$currentHop.withValue(nil) { try await next(request) }
        guard Self.isRedirect(first.1.statusCode) else { return first }
        return try await follow(request, answered: first, next: next)
    }

    /// The identity of a request in a chain, for finding loops.
    private struct Visit: Hashable {
        let method: String
        let url: String

        init(method: String?, url: URL) {
            self.method = (method ?? "GET").uppercased()
            guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
                self.url = url.absoluteString
                return
            }
            let scheme = components.scheme?.lowercased()
            components.fragment = nil
            components.scheme = scheme
            components.host = components.host?.lowercased()
            if let scheme, components.port == HTTPOrigin.defaultPort(for: scheme) {
                components.port = nil
            }
            self.url = components.string ?? url.absoluteString
        }
    }

    private func follow(
        _ original: URLRequest,
        answered firstResponse: (Data, HTTPURLResponse),
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        guard let originalURL = original.url, let originalOrigin = HTTPOrigin(originalURL) else {
            return firstResponse
        }
        var current = original
        var currentURL = originalURL
        var currentOrigin = originalOrigin
        var response = firstResponse
        var visited: Set<Visit> = [Visit(method: original.httpMethod, url: originalURL)]
        var hasLeftOriginalOrigin = false
        var hops = 0

        while Self.isRedirect(response.1.statusCode) {
            let status = response.1.statusCode
            guard let target = Self.target(of: response.1, requestedAt: currentURL),
                let targetOrigin = HTTPOrigin(target)
            else {
                return response
            }
            if currentOrigin.scheme == "https" && targetOrigin.scheme == "http" && !allowsInsecureRedirects {
                throw CourierError(
                    .insecureRedirect,
                    message: "refused to follow a redirect from https to http (\(Redaction.redactedURL(target))); "
                        + "pass allowsInsecureRedirects: true to followingRedirects to allow it",
                    request: current,
                    response: response.1,
                    body: response.0
                )
            }
            guard hops < maximum else {
                throw CourierError(
                    .tooManyRedirects,
                    message: "more than \(maximum) redirects; the last one asked for \(Redaction.redactedURL(target))",
                    request: current,
                    response: response.1,
                    body: response.0
                )
            }
            var redirected = try redirectedRequest(from: current, status: status, to: target, answered: response)
            if targetOrigin != currentOrigin {
                removeSensitiveHeaders(from: &redirected)
            }
            let visit = Visit(method: redirected.httpMethod, url: target)
            guard visited.insert(visit).inserted else {
                throw CourierError(
                    .redirectLoop,
                    message: "the redirect to \(visit.method) \(Redaction.redactedURL(target)) leads back to a "
                        + "request already made in this chain",
                    request: current,
                    response: response.1,
                    body: response.0
                )
            }
            hops += 1
            hasLeftOriginalOrigin = hasLeftOriginalOrigin || targetOrigin != originalOrigin
            let hop = RedirectHop(
                originalURL: originalURL,
                url: target,
                number: hops,
                status: status,
                hasLeftOriginalOrigin: hasLeftOriginalOrigin
            )
            let sending = redirected
            response = try await RedirectContext.$currentHop.withValue(hop) { try await next(sending) }
            current = redirected
            currentURL = target
            currentOrigin = targetOrigin
        }
        return response
    }

    /// The absolute `http` or `https` URL that `response`'s `Location` names, resolved against `url`.
    static func target(of response: HTTPURLResponse, requestedAt url: URL) -> URL? {
        guard let location = response.value(forHTTPHeaderField: "Location")?.trimmingCharacters(in: .whitespaces),
            !location.isEmpty,
            let target = URL(string: location, relativeTo: url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = target.host, !host.isEmpty
        else {
            return nil
        }
        return target
    }

    /// The request for the next hop.
    ///
    /// - Throws: ``CourierError/Code/bodyNotReplayable`` for a `307`/`308` whose body is a stream that
    ///   cannot be sent again.
    func redirectedRequest(
        from request: URLRequest,
        status: Int,
        to target: URL,
        answered response: (Data, HTTPURLResponse)
    ) throws -> URLRequest {
        var redirected = request
        if status == 307 || status == 308 {
            // They send the same method and body again: a streamed body is made afresh.
            redirected = try Replay.again(
                request,
                for: "following the \(status) redirect",
                response: response.1,
                body: response.0
            )
        }
        redirected.url = target
        let method = (request.httpMethod ?? "GET").uppercased()
        switch status {
        case 301, 302, 303:
            if method != "HEAD" {
                redirected.httpMethod = "GET"
            }
            redirected.httpBody = nil
            redirected.httpBodyStream = nil
            removeHeaders(from: &redirected) { Self.bodyHeaders.contains($0) }
        default:
            break
        }
        return redirected
    }

    /// Removes the fixed list, every one of ``CredentialHeaders``, the names the middleware was given, and every
    /// header an authenticating layer outside said carries its credential (see ``AttachedCredential``), which it
    /// marks as removed.
    private func removeSensitiveHeaders(from request: inout URLRequest) {
        removeHeaders(from: &request) { strippedOnOriginChange.contains($0) || CredentialHeaders.contains($0) }
        guard let attached = AttachedCredential.current else { return }
        for credential in attached.all {
            request.setValue(nil, forHTTPHeaderField: credential.headerName)
            credential.setRemoved(true)
        }
    }

    private func removeHeaders(from request: inout URLRequest, where shouldRemove: (String) -> Bool) {
        guard let fields = request.allHTTPHeaderFields else { return }
        for name in fields.keys where shouldRemove(name.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: name)
        }
    }
}
