public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The error Courier throws: a stable ``code`` and what is known about the failure.
///
/// Switch on ``code`` (it is stable across releases); read ``statusCode``, ``responseHeaders`` and
/// ``bodyPreview`` when there was a response; ``middleware`` names the layer the error came from; and
/// ``underlying`` is the error that caused it, if any. A typed API error body declared on the request or
/// the client is available through ``apiError(as:)``.
///
/// The error of a retried call is the last attempt's, with the story added: ``attempts`` and ``elapsed`` say
/// how many attempts the call made and how long it ran, and the ``description`` starts with them
/// (`after 3 attempts over 6.4 s: …`). A ``Code/timedOut`` says which timeout expired (``timeoutScope``: the
/// whole call's or one attempt's) and how long it ran.
///
/// Cancellation is never a `CourierError`: it is reported as `CancellationError`.
///
/// No description of a `CourierError` contains a secret: `Authorization`, `Cookie`, `Set-Cookie` and
/// `Proxy-Authorization` values, bearer tokens, token parameters (also nested in other parameters), URL
/// user-info, and every value Courier knows to be secret (see ``Redaction/registerSecret(_:)``) are redacted,
/// in the texts of underlying errors too. Reflection (`dump`, `Mirror`) shows the same redacted information:
/// the underlying error as its redacted description, the body as its ``bodyPreview``.
public struct CourierError: Error, Sendable {
    /// A stable identifier for a kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidRequest
            case encodingFailed
            case transport
            case nonHTTPResponse
            case timedOut
            case unacceptableStatus
            case decodingFailed
            case authenticationRejected
            case refreshFailed
            case tooManyRefreshes
            case tooManyRedirects
            case redirectLoop
            case insecureRedirect
            case bodyTooLarge
            case bodyNotReplayable
            case clientShutDown
            case circuitOpen
            case concurrencyLimited
            case rateLimited
            case unacceptableContentType
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The request could not be formed: a URL that does not parse, a header with CR, LF or NUL, ….
        public static let invalidRequest = Code(.invalidRequest)
        /// The request body could not be encoded.
        public static let encodingFailed = Code(.encodingFailed)
        /// The transport failed (connection refused, reset, DNS failure, …); see ``CourierError/underlying``.
        public static let transport = Code(.transport)
        /// The transport returned a response that is not an HTTP response.
        public static let nonHTTPResponse = Code(.nonHTTPResponse)
        /// A timeout middleware's deadline passed; see ``CourierError/timeout``.
        public static let timedOut = Code(.timedOut)
        /// The response status is not acceptable; see ``CourierError/statusCode``.
        public static let unacceptableStatus = Code(.unacceptableStatus)
        /// The response body could not be decoded into the requested type.
        public static let decodingFailed = Code(.decodingFailed)
        /// The server rejected the credential, and a refreshed one too.
        public static let authenticationRejected = Code(.authenticationRejected)
        /// Refreshing the credential failed; see ``CourierError/underlying``.
        public static let refreshFailed = Code(.refreshFailed)
        /// Too many credential refreshes happened within the configured window.
        public static let tooManyRefreshes = Code(.tooManyRefreshes)
        /// More redirects than allowed.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// A redirect led back to a URL already visited.
        public static let redirectLoop = Code(.redirectLoop)
        /// A redirect from HTTPS to HTTP was refused.
        public static let insecureRedirect = Code(.insecureRedirect)
        /// The response body is larger than the configured maximum.
        public static let bodyTooLarge = Code(.bodyTooLarge)
        /// A layer had to send the request again (a retry, a restart after a token refresh, a `307`/`308`
        /// redirect), but its body is a one-shot stream that cannot be sent twice.
        public static let bodyNotReplayable = Code(.bodyNotReplayable)
        /// The client is shutting down or shut down and accepts no new requests.
        public static let clientShutDown = Code(.clientShutDown)
        /// A circuit breaker is open for the request's host.
        public static let circuitOpen = Code(.circuitOpen)
        /// A concurrency limiter refused the request.
        public static let concurrencyLimited = Code(.concurrencyLimited)
        /// A rate limiter refused the request without sending it: its partition's queue was full, or the wait
        /// for a slot would have been longer than the policy's maximum.
        public static let rateLimited = Code(.rateLimited)
        /// The response is not of the media type the call reads: an event stream answered with a `2xx` that is
        /// not `text/event-stream` (a JSON error body, an HTML page from a proxy). ``CourierError/message``
        /// names the type received; ``CourierError/statusCode`` and ``CourierError/responseHeaders`` are set.
        public static let unacceptableContentType = Code(.unacceptableContentType)

        /// The code's stable name, for example `timedOut`.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A short human-readable explanation (never contains secrets).
    public var message: String
    /// The request's method, if known (a placeholder when it is not a valid HTTP token).
    public var method: String?
    /// The URL with secrets redacted, if known: the URL of the response the error came from (after
    /// redirects, the last hop's), or else the request's.
    public var redactedURL: String?
    /// The HTTP status code, when there was a response.
    public var statusCode: Int?
    /// The response headers, when there was a response; values of sensitive headers are redacted.
    public var responseHeaders: [String: String]
    /// The response body, when there was one (at most ``maximumStoredBodySize`` bytes are kept).
    ///
    /// This is the raw body and may contain anything the server sent; it is never part of a description.
    public var responseBody: Data?
    /// The name of the middleware the error came from, or `nil` when it came from the transport or from
    /// an unnamed middleware.
    public var middleware: String?
    /// The error that caused this one, if any.
    public var underlying: (any Error)?
    /// The timeout that expired, for ``Code/timedOut``.
    public var timeout: Duration?
    /// Which timeout expired, for ``Code/timedOut``: the whole call's (``TimeoutScope/call``) or one
    /// attempt's (``TimeoutScope/attempt``).
    public var timeoutScope: TimeoutScope?
    /// How many attempts the call made: set on the error a ``Middleware/retry(_:clock:)`` layer gives up with
    /// (1 when it did not retry), and on a whole-call timeout's error when a layer counted the call's attempts
    /// (the logging or timing middleware, or the timeout itself around a retry). `nil` otherwise.
    public var attempts: Int?
    /// How long the call ran before it failed: on the error a retry layer gives up with, from the start of its
    /// first attempt; on a ``Code/timedOut``, from the start of what the timeout bounds (the call, or the
    /// attempt) to the moment it gave up. `nil` otherwise.
    public var elapsed: Duration?
    /// A decoded API error body, when the request or client declared one and it decoded.
    var decodedAPIError: (any Sendable)?
    /// Whether a chain layer has already recorded where this error came from.
    var isAttributed = false
    /// The response as it came, for Courier's own decisions (an authentication rule reads its real
    /// headers); never part of a description or a reflection.
    var response: HTTPURLResponse?
    /// The request's URL, redacted, when the response came from another URL (a redirect was followed).
    var redactedRequestURL: String?

    /// How much of a response body an error keeps.
    public static let maximumStoredBodySize = 64 * 1024

    /// Creates an error.
    ///
    /// Middleware written by users can throw `CourierError`s too; the chain records the middleware's name.
    ///
    /// - Parameters:
    ///   - code: What kind of failure this is.
    ///   - message: A short explanation; it must not contain secrets.
    ///   - request: The request that failed, if any (only its method and redacted URL are kept).
    ///   - response: The response, if there was one.
    ///   - body: The response body, if there was one.
    ///   - underlying: The error that caused this one.
    public init(
        _ code: Code,
        message: String,
        request: URLRequest? = nil,
        response: HTTPURLResponse? = nil,
        body: Data? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = Redaction.redactedText(message)
        self.method = request.map(RequestValidation.printableMethod)
        let requestURL = request?.url
        if let responseURL = response?.url, !HTTPOrigin.isSameResource(responseURL, requestURL) {
            self.redactedURL = Redaction.redactedURL(responseURL)
            self.redactedRequestURL = requestURL.map(Redaction.redactedURL)
        } else {
            self.redactedURL = requestURL.map(Redaction.redactedURL)
        }
        self.response = response
        self.statusCode = response?.statusCode
        self.responseHeaders = response.map(Redaction.redactedHeaders) ?? [:]
        if let body {
            if body.count > Self.maximumStoredBodySize {
                // A copy, not a slice: a slice would keep the whole (possibly huge) body alive with the error.
                self.responseBody = body.prefix(Self.maximumStoredBodySize).withUnsafeBytes { Data($0) }
            } else {
                self.responseBody = body
            }
        }
        self.underlying = underlying
    }

    /// A short preview of the response body (at most 256 characters), with secrets redacted.
    public var bodyPreview: String? {
        guard let responseBody, !responseBody.isEmpty else { return nil }
        return Redaction.bodyPreview(responseBody)
    }

    /// Returns the typed API error carried by this error.
    ///
    /// When the request or client declared an error body type, the body was decoded when the error was
    /// made and that value is returned. Otherwise the stored ``responseBody`` is decoded as JSON now.
    ///
    /// ```swift
    /// } catch let error as CourierError {
    ///     if let apiError = error.apiError(as: APIError.self), apiError.code == 999 { … }
    /// }
    /// ```
    ///
    /// - Returns: The decoded value, or `nil` when there is no body or it is not a `T`.
    public func apiError<T: Decodable>(as type: T.Type) -> T? {
        if let value = decodedAPIError as? T { return value }
        guard let responseBody, !responseBody.isEmpty else { return nil }
        return try? JSONDecoder().decode(T.self, from: responseBody)
    }

    /// Returns a copy that records `name` as the middleware the error came from, unless a layer nearer the
    /// transport already did.
    func attributed(toMiddleware name: String?) -> CourierError {
        guard !isAttributed else { return self }
        var copy = self
        copy.middleware = name
        copy.isAttributed = true
        return copy
    }
}

extension CourierError: CustomStringConvertible, CustomDebugStringConvertible, LocalizedError {
    /// A one-line summary with secrets redacted, for example
    /// `CourierError.unacceptableStatus: GET https://api.example.com/users/42 → 403: the status 403 is not acceptable`.
    ///
    /// A call that a retry layer sent more than once, and a timeout, tell how the call got there before the
    /// message (the last attempt's cause): `CourierError.unacceptableStatus: GET https://api.example.com/users/42
    /// → 503: after 3 attempts over 6.4 s: the status 503 is not acceptable (expected 200..<300) [middleware:
    /// validatingStatus]`, or `CourierError.timedOut: GET https://api.example.com/users/42: after 2 attempts over
    /// 10.0 s: the whole-call timeout of 10.0 seconds passed [middleware: timeout]`. ``attempts``, ``elapsed``
    /// and ``timeoutScope`` hold the same facts.
    public var description: String {
        var text = "CourierError.\(code)"
        if let method, let redactedRequestURL, let redactedURL {
            text +=
                ": \(method) \(Redaction.redactedURLString(redactedRequestURL)), redirected to "
                + Redaction.redactedURLString(redactedURL)
        } else if let method, let redactedURL {
            text += ": \(method) \(Redaction.redactedURLString(redactedURL))"
        }
        if let statusCode {
            text += " → \(statusCode)"
        }
        text += ": "
        if let story {
            text += "\(story): "
        }
        text += Redaction.redactedText(message)
        if let middleware {
            text += " [middleware: \(middleware)]"
        }
        if let underlying {
            text += " (underlying: \(TransportFailure.describeUnderlying(underlying)))"
        }
        return text
    }

    /// The description, followed by the redacted response headers and body preview.
    public var debugDescription: String {
        var text = description
        if !responseHeaders.isEmpty {
            let headers = responseHeaders.sorted { $0.key < $1.key }.map {
                "\($0.key): \(Redaction.redactedText($0.value))"
            }
            text += "; headers: [\(headers.joined(separator: ", "))]"
        }
        if let bodyPreview {
            text += "; body: \(bodyPreview)"
        }
        return text
    }

    /// The description; Foundation's `localizedDescription` uses it.
    public var errorDescription: String? { description }
}

// MARK: - Factories used across the SDK

extension CourierError {
    static func invalidRequest(_ message: String, request: URLRequest?, underlying: (any Error)? = nil) -> Self {
        CourierError(.invalidRequest, message: message, request: request, underlying: underlying)
    }

    static func transport(_ error: any Error, request: URLRequest) -> Self {
        CourierError(.transport, message: "the transport failed", request: request, underlying: error)
    }
}
