#if Logging || Metrics || Tracing
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Low-cardinality descriptions of a request and its outcome, named after the OpenTelemetry semantic
/// conventions for HTTP clients, shared by the logging, metrics and tracing integrations.
enum HTTPAttributes {
    /// `http.request.method`.
    static let method = "http.request.method"
    /// `http.request.method_original`, set only when ``method`` is `_OTHER`.
    static let methodOriginal = "http.request.method_original"
    /// `http.response.status_code`.
    static let statusCode = "http.response.status_code"
    /// `server.address`.
    static let serverAddress = "server.address"
    /// `server.port`.
    static let serverPort = "server.port"
    /// `url.full`, always redacted.
    static let urlFull = "url.full"
    /// `url.scheme`.
    static let urlScheme = "url.scheme"
    /// `error.type`.
    static let errorType = "error.type"
    /// `http.request.resend_count`.
    static let resendCount = "http.request.resend_count"
    /// `http.response.body.size`.
    static let responseBodySize = "http.response.body.size"

    /// What the OpenTelemetry conventions put in place of a method they do not know, and of any value past a
    /// cardinality limit.
    static let other = "_OTHER"

    /// The request's method when it is one of the methods HTTP defines, `_OTHER` otherwise, so that a
    /// made-up method cannot grow the number of metric series.
    static func normalizedMethod(_ method: String) -> String {
        switch method {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY": method
        default: other
        }
    }

    /// The request's method as sent (`GET` when the request names none), or `<invalid method>`.
    static func method(of request: URLRequest) -> String {
        // Never the raw value: a method that is not a token (say, with a CR LF in it) is not copied into
        // spans, metrics or logs.
        RequestValidation.printableMethod(of: request)
    }

    /// `1xx` to `5xx` for a status code, `_OTHER` for anything outside 100...599.
    static func statusClass(_ statusCode: Int) -> String {
        switch statusCode {
        case 100..<200: "1xx"
        case 200..<300: "2xx"
        case 300..<400: "3xx"
        case 400..<500: "4xx"
        case 500..<600: "5xx"
        default: other
        }
    }

    /// A low-cardinality name for a failure: the ``CourierError/Code`` (`timedOut`, `transport`, …) for a
    /// ``CourierError``, and the error's type name for any other error. Never contains the error's text.
    static func errorType(of error: any Error) -> String {
        if let error = error as? CourierError { return error.code.description }
        return String(reflecting: type(of: error))
    }

    /// The attempt that is running (1 for the first), when a retry layer around the current layer says which
    /// one (``RetryContext``); `nil` outside any retry layer.
    static var currentAttempt: Int? {
        RetryContext.current?.attempt
    }

    /// Whether `error` means the caller's task was cancelled rather than that the request failed (the same
    /// rule as the request counter's: a timeout above that cancelled the request at its deadline is a failure).
    static func isCancellation(_ error: any Error) -> Bool {
        Deadline.isCallerCancellation(error)
    }
}
#endif
