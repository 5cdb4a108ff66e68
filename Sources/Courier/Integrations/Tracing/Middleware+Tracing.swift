#if Tracing
import Foundation
public import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Traces every request that passes through it with the tracer bootstrapped in `InstrumentationSystem`
    /// (or bound with `withTracer`), read for each request (trait `Tracing`).
    ///
    /// ```swift
    /// InstrumentationSystem.bootstrap(otelTracer)        // once, at start-up
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.retry(.default), .tracing(), .validatingStatus()]
    /// )
    /// ```
    ///
    /// See ``tracing(tracer:kind:)`` for what a span records.
    ///
    /// - Parameter kind: The kind of span; `.client` by default.
    /// - Returns: A middleware named `"tracing"`.
    public static func tracing(kind: SpanKind = .client) -> Middleware {
        let tracing = RequestTracing(kind: kind)
        return Middleware(name: "tracing") { request, next in
            try await tracing.send(request, next: next, tracer: InstrumentationSystem.tracer)
        }
    }

    /// Traces every request that passes through it with `tracer`, and propagates the trace context in the
    /// request's headers (trait `Tracing`).
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .tracing(tracer: tracer, kind: .internal),   // optional: one span for the whole call
    ///         .retry(.default),
    ///         .tracing(tracer: tracer),                    // one client span per attempt
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// Each request that reaches this layer gets one span, a child of the task's current span
    /// (`InstrumentationContext.current`), named after the method (`GET`; `HTTP` for a method HTTP does not
    /// define), with attributes from the OpenTelemetry semantic conventions for HTTP clients:
    /// `http.request.method` (and `http.request.method_original`), `url.full` (redacted with ``Redaction``:
    /// no user-info, no sensitive query values), `server.address`, `server.port`,
    /// `http.response.status_code`, `http.request.resend_count` (on a retry, from ``RetryContext``), and `error.type` on failure. The span's context becomes the current
    /// context for the layers inside, and the tracer injects it into the request's headers with a
    /// ``URLRequestHeaderInjector`` (a W3C `traceparent`, when the tracer speaks W3C Trace Context).
    ///
    /// **Outcome.** A response below 400 leaves the status unset. A response of 400 or more sets the status to
    /// error and `error.type` to the status code (`"503"`). A thrown error is recorded on the span, sets the
    /// status to error, and sets `error.type` to its ``CourierError/Code`` (`timedOut`, …) or its type's name;
    /// a ``CourierError`` is recorded as it is (its description is redacted), any other error as a redacted
    /// copy of its description. Cancellation is not an error: the span gets a `cancelled` event and ends.
    /// The span ends on every path, and errors and cancellation pass through unchanged.
    ///
    /// **Where to put it.** OpenTelemetry asks for one client span per HTTP request sent, so put it inside
    /// `.retry` (and inside redirects and authentication, which may also resend): each attempt is then a span
    /// of its own, and each sends its own `traceparent`. For one span that covers the whole call as the
    /// caller sees it, retries and backoff included, add a second layer outermost with `kind: .internal`;
    /// the attempt spans become its children. When only an outer layer is present, its span is the one
    /// propagated.
    ///
    /// **Cost.** With `NoOpTracer` (what `InstrumentationSystem` has when nothing was bootstrapped) the layer
    /// passes the request straight on. Otherwise attributes are built only when the span is recording, and
    /// the request is copied only when the tracer injects a header.
    ///
    /// - Parameters:
    ///   - tracer: The tracer; an `InMemoryTracer` in tests.
    ///   - kind: The kind of span; `.client` by default.
    /// - Returns: A middleware named `"tracing"`.
    public static func tracing(tracer: some Tracer, kind: SpanKind = .client) -> Middleware {
        let tracing = RequestTracing(kind: kind)
        return Middleware(name: "tracing") { request, next in
            try await tracing.send(request, next: next, tracer: tracer)
        }
    }
}

/// Starts, describes and ends the span of one request; made once per middleware.
struct RequestTracing: Sendable {
    let kind: SpanKind

    func send<T: Tracer>(_ request: URLRequest, next: Next, tracer: T) async throws -> (Data, HTTPURLResponse) {
        // With no tracer bootstrapped, a span would record nothing, inject nothing and change no context.
        if T.self == NoOpTracer.self { return try await next(request) }
        let method = HTTPAttributes.method(of: request)
        let normalizedMethod = HTTPAttributes.normalizedMethod(method)
        let span = tracer.startSpan(
            normalizedMethod == HTTPAttributes.other ? "HTTP" : normalizedMethod,
            ofKind: kind
        )
        if span.isRecording {
            span.updateAttributes { attributes in
                describe(request, method: method, normalizedMethod: normalizedMethod, in: &attributes)
            }
        }
        var outgoing = request
        tracer.inject(span.context, into: &outgoing, using: URLRequestHeaderInjector())
        do {
            let (data, response) = try await InstrumentationContext.withValue(span.context) { [outgoing] in
                try await next(outgoing)
            }
            completed(span, statusCode: response.statusCode)
            return (data, response)
        } catch {
            failed(span, error: error)
            throw error
        }
    }

    private func describe(
        _ request: URLRequest,
        method: String,
        normalizedMethod: String,
        in attributes: inout SpanAttributes
    ) {
        attributes[HTTPAttributes.method] = normalizedMethod
        if normalizedMethod != method {
            attributes[HTTPAttributes.methodOriginal] = method
        }
        if let attempt = HTTPAttributes.currentAttempt, attempt > 1 {
            attributes[HTTPAttributes.resendCount] = attempt - 1
        }
        guard let url = request.url else { return }
        attributes[HTTPAttributes.urlFull] = Redaction.redactedURL(url)
        if let host = url.host, !host.isEmpty {
            attributes[HTTPAttributes.serverAddress] = host
        }
        if let port = url.port ?? Self.defaultPort(forScheme: url.scheme) {
            attributes[HTTPAttributes.serverPort] = port
        }
    }

    private func completed(_ span: some Span, statusCode: Int) {
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes[HTTPAttributes.statusCode] = statusCode
                if statusCode >= 400 {
                    attributes[HTTPAttributes.errorType] = String(statusCode)
                }
            }
            if statusCode >= 400 {
                span.setStatus(SpanStatus(code: .error, message: "HTTP status \(statusCode)"))
            }
        }
        span.end()
    }

    private func failed(_ span: some Span, error: any Error) {
        defer { span.end() }
        guard span.isRecording else { return }
        if HTTPAttributes.isCancellation(error) {
            span.addEvent("cancelled")
            return
        }
        let courierError = error as? CourierError
        span.updateAttributes { attributes in
            attributes[HTTPAttributes.errorType] = HTTPAttributes.errorType(of: error)
            if let statusCode = courierError?.statusCode {
                attributes[HTTPAttributes.statusCode] = statusCode
            }
        }
        if let courierError {
            span.recordError(courierError)
            span.setStatus(SpanStatus(code: .error, message: courierError.description))
        } else {
            let redacted = RedactedError(error)
            span.recordError(redacted)
            span.setStatus(SpanStatus(code: .error, message: redacted.description))
        }
    }

    private static func defaultPort(forScheme scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "https", "wss": 443
        case "http", "ws": 80
        default: nil
        }
    }
}

/// What a span records in place of an error that is not a ``CourierError``: its type's name and its
/// description with secrets redacted, since tracers export an error's description.
struct RedactedError: Error, CustomStringConvertible {
    /// The original error's type, for example `MyApp.SigningError`.
    let typeName: String
    /// The original error's description, redacted.
    let description: String

    init(_ error: any Error) {
        self.typeName = String(reflecting: type(of: error))
        self.description = "\(typeName): \(Redaction.redactedText(String(describing: error)))"
    }
}
#endif
