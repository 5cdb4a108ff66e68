import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Adds header fields to every request, replacing any value the request already has under the same
    /// name; a credential header only to the requests `origins` allows.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.headers(["User-Agent": "courier/1.0", "Accept-Language": "en", "X-API-Key": apiKey])]
    /// )
    /// ```
    ///
    /// The first field of a name replaces the request's value; further fields of the same name (made with
    /// ``HTTPHeaders/add(name:value:)``) are added after it, so a header can carry several values.
    ///
    /// **Credentials stay with their origins.** A field whose name is a credential header
    /// (``CredentialHeaders/contains(_:)`` when the middleware is made: `Authorization`, `Cookie`, `X-API-Key`, a
    /// name containing `token`, …) is added only to requests for `origins` (the client's base URL's origin by
    /// default; see ``CredentialOrigins``), never to a pre-signed link or a CDN on another origin, and never on
    /// a redirect hop that left the first request's origin. Through a client without a base URL, such a field
    /// makes every request fail with ``CourierError/Code/invalidRequest`` unless `origins` names them with
    /// ``CredentialOrigins/only(_:)-(URL...)``. For a credential that changes or is refreshed, use
    /// ``authenticating(token:scheme:origins:)`` and its siblings. Like an authenticating layer, list it before
    /// (outside) `.caching` and `.coalescing`: listed after them, it adds a credential they cannot see, and they
    /// fail the call with ``CourierError/Code/invalidRequest`` rather than share its response.
    ///
    /// The fields are checked once, when the middleware is made. A name that is not an HTTP token, or a
    /// value containing CR, LF or NUL (header injection), makes every request through this middleware
    /// fail with ``CourierError/Code/invalidRequest`` before anything is sent. It does not crash: header
    /// values often come from configuration, and a server should report them, not trap.
    ///
    /// - Parameters:
    ///   - headers: The fields to add.
    ///   - origins: The origins that receive the fields that are credential headers.
    /// - Returns: A middleware named `"headers"`.
    public static func headers(_ headers: HTTPHeaders, origins: CredentialOrigins = .baseURL) -> Middleware {
        let name = "headers"
        let patch: HeaderPatch
        do {
            patch = try HeaderPatch(headers)
        } catch let error as CourierError {
            return .failing(name: name, message: error.message)
        } catch {
            return .failing(name: name, message: "the headers are not valid")
        }
        if patch.isEmpty {
            return Middleware(name: name, waitsOnlyWithinDeadline: true) { request, next in try await next(request) }
        }
        let (plain, credentials) = patch.separatingCredentials()
        if credentials.isEmpty {
            return Middleware(name: name, waitsOnlyWithinDeadline: true) { request, next in
                var request = request
                plain.apply(to: &request)
                return try await next(request)
            }
        }
        if let problem = origins.problem {
            return .failing(name: name, message: problem)
        }
        // Printed nowhere, as an authenticating middleware's token is not, for as long as the middleware lives.
        let pins = credentials.values.map { SecretPin($0) }
        return Middleware(name: name, waitsOnlyWithinDeadline: true) { request, next in
            withExtendedLifetime(pins) {}
            var request = request
            plain.apply(to: &request)
            if try origins.allows(request, through: next) {
                credentials.apply(to: &request)
                // A cache or coalescing layer listed outside never saw these fields: it must not share the response.
                CredentialWitness.current?.record()
            }
            return try await next(request)
        }
    }

    /// Asks for JSON: sets `Accept: application/json`, and `Content-Type: application/json` on requests
    /// that have a body.
    ///
    /// ```swift
    /// let client = Client(baseURL: base, middleware: [.jsonHeaders, .validatingStatus()])
    /// ```
    ///
    /// Values the request already has win: an existing `Accept` (say `application/problem+json`) or
    /// `Content-Type` is kept. A request whose body is empty gets no `Content-Type`.
    ///
    /// The middleware is named `"jsonHeaders"`.
    public static let jsonHeaders = Middleware(name: "jsonHeaders", waitsOnlyWithinDeadline: true) { request, next in
        let needsAccept = request.value(forHTTPHeaderField: "Accept") == nil
        let hasBody = !(request.httpBody?.isEmpty ?? true) || request.httpBodyStream != nil
        let needsContentType = hasBody && request.value(forHTTPHeaderField: "Content-Type") == nil
        guard needsAccept || needsContentType else { return try await next(request) }
        var request = request
        if needsAccept { request.setValue("application/json", forHTTPHeaderField: "Accept") }
        if needsContentType { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        return try await next(request)
    }
}
