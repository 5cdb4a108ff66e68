/// One structured log entry about a request, made by the `.logging` middleware and handed to a ``LogSink``.
///
/// Everything in a record is safe to print: the URL has its user-info and sensitive query values
/// redacted, sensitive header values (`Authorization`, `Cookie`, `Set-Cookie`, `Proxy-Authorization`, …)
/// are replaced, and error text and body previews pass through ``Redaction``.
///
/// ```swift
/// .logging(to: LogSink { record in
///     if record.event == .failed { alerts.notify(record.description) }
/// })
/// ```
///
/// ``description`` is a one-line summary such as
/// `[info] GET https://api.example.com/users/42 → 200 (12.3 ms)`; ``metadata`` holds the same facts as
/// key-value pairs for structured loggers.
public struct LogRecord: Sendable, CustomStringConvertible {
    /// How important a record is; the levels match swift-log's.
    public enum Level: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
        /// Very fine detail.
        case trace
        /// Detail useful when debugging.
        case debug
        /// Normal operation.
        case info
        /// Normal but noteworthy.
        case notice
        /// Something went wrong that the caller may handle (an error status, say).
        case warning
        /// A request failed.
        case error
        /// A failure that needs attention now.
        case critical

        /// Whether `lhs` is less important than `rhs`.
        public static func < (lhs: Level, rhs: Level) -> Bool {
            lhs.rawValue < rhs.rawValue
        }

        /// The level's name, for example `warning`.
        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }
    }

    /// What a record is about.
    public enum Event: String, Sendable, Hashable, CustomStringConvertible {
        /// The request is about to be sent on (only logged when the middleware has a `startLevel`).
        case started
        /// A response arrived (whatever its status).
        case completed
        /// The rest of the chain threw an error.
        case failed
        /// The request was cancelled.
        case cancelled

        /// The event's name, for example `completed`.
        public var description: String { rawValue }
    }

    /// How important the record is.
    public let level: Level
    /// What the record is about.
    public let event: Event
    /// The request's method.
    public let method: String
    /// The request's URL, redacted.
    public let url: String
    /// The response status, when there was a response (also for an unacceptable-status error).
    public let statusCode: Int?
    /// How long the rest of the chain took; `nil` for ``Event/started``.
    public let duration: Duration?
    /// The error's code, when a ``CourierError`` was thrown.
    public let errorCode: CourierError.Code?
    /// The error's type and message, redacted, when an error was thrown.
    public let error: String?
    /// The middleware the error came from, when a ``CourierError`` names one.
    public let middleware: String?
    /// The request's headers, redacted, when the middleware `includesHeaders`.
    public let requestHeaders: [String: String]?
    /// The response's headers, redacted, when the middleware `includesHeaders` and there was a
    /// response.
    public let responseHeaders: [String: String]?
    /// The start of the response body, redacted, when the middleware `includesBodyPreview`.
    public let bodyPreview: String?
    /// The call's attempts and where its time went (waiting for a slot, for a refresh, in backoff, for the
    /// response head, for the body), as the layers below the logging middleware measured it; `nil` for
    /// ``Event/started``.
    public let call: CallSummary?

    /// Creates a record.
    ///
    /// The initializer stores what it is given: pass values that are already redacted (see
    /// ``Redaction``). The logging middleware does.
    ///
    /// - Parameters:
    ///   - level: How severe the record is.
    ///   - event: What the record is about.
    ///   - method: The request's method.
    ///   - url: The request's URL, redacted.
    ///   - statusCode: The response status, when there was a response.
    ///   - duration: How long the request took.
    ///   - errorCode: The error's code, when a ``CourierError`` was thrown.
    ///   - error: The error's description, redacted.
    ///   - middleware: The middleware the error came from.
    ///   - requestHeaders: The request's headers, redacted.
    ///   - responseHeaders: The response's headers, redacted.
    ///   - bodyPreview: The start of the response body, redacted.
    ///   - call: The call's attempts and waits.
    public init(
        level: Level,
        event: Event,
        method: String,
        url: String,
        statusCode: Int? = nil,
        duration: Duration? = nil,
        errorCode: CourierError.Code? = nil,
        error: String? = nil,
        middleware: String? = nil,
        requestHeaders: [String: String]? = nil,
        responseHeaders: [String: String]? = nil,
        bodyPreview: String? = nil,
        call: CallSummary? = nil
    ) {
        self.level = level
        self.event = event
        self.method = method
        self.url = url
        self.statusCode = statusCode
        self.duration = duration
        self.errorCode = errorCode
        self.error = error
        self.middleware = middleware
        self.requestHeaders = requestHeaders
        self.responseHeaders = responseHeaders
        self.bodyPreview = bodyPreview
        self.call = call
    }

    /// A short message without the level, for example `GET https://api.example.com/users/42 → 200 (12.3 ms)`.
    ///
    /// With a ``call`` summary, the parentheses also say where the time went: the attempts when there were
    /// more than one, then each wait that is not zero, for example
    /// `GET https://api.example.com/users/42 failed: timedOut (10012.0 ms; 3 attempts; backoff 400.0 ms, head
    /// 9600.0 ms)`.
    public var message: String {
        var text = "\(method) \(url)"
        switch event {
        case .started:
            text += " started"
        case .completed:
            if let statusCode { text += " → \(statusCode)" }
        case .failed:
            text += " failed"
            if let errorCode { text += ": \(errorCode)" }
            if let statusCode { text += " (status \(statusCode))" }
        case .cancelled:
            text += " cancelled"
        }
        if let duration {
            text += " (\(Self.milliseconds(duration)) ms"
            if let call {
                let waits = call.waits
                if call.attempts > 1 { text += "; \(call.attempts) attempts" }
                if !waits.isEmpty { text += "; " + waits.joined(separator: ", ") }
            }
            text += ")"
        }
        return text
    }

    /// The same facts as key-value pairs, for structured loggers: `http.method`, `http.url`,
    /// `http.status_code`, `duration_ms`, `event`, `error.code`, `error`, `middleware`,
    /// `http.request.header.<name>`, `http.response.header.<name>` and `http.response.body_preview`, each
    /// present only when known; with a ``call`` summary, `attempts` and, for each wait that is not zero,
    /// `wait.slot_ms`, `wait.refresh_ms`, `wait.backoff_ms`, `wait.head_ms` and `wait.body_ms`.
    public var metadata: [String: String] {
        var metadata = ["event": event.rawValue, "http.method": method, "http.url": url]
        if let statusCode { metadata["http.status_code"] = String(statusCode) }
        if let duration { metadata["duration_ms"] = Self.milliseconds(duration) }
        if let errorCode { metadata["error.code"] = errorCode.description }
        if let error { metadata["error"] = error }
        if let middleware { metadata["middleware"] = middleware }
        Self.add(requestHeaders, as: "http.request.header.", to: &metadata)
        Self.add(responseHeaders, as: "http.response.header.", to: &metadata)
        if let bodyPreview { metadata["http.response.body_preview"] = bodyPreview }
        for (key, value) in call?.metadata ?? [] {
            metadata[key] = value
        }
        return metadata
    }

    /// A one-line summary: the level, the ``message``, and the error, middleware, headers and body preview
    /// when present.
    public var description: String {
        var text = "[\(level)] \(message)"
        if let error { text += ": \(error)" }
        if let middleware { text += " [middleware: \(middleware)]" }
        if let requestHeaders, !requestHeaders.isEmpty {
            text += "; request headers: \(Self.format(requestHeaders))"
        }
        if let responseHeaders, !responseHeaders.isEmpty {
            text += "; response headers: \(Self.format(responseHeaders))"
        }
        if let bodyPreview { text += "; body: \(bodyPreview)" }
        return text
    }

    private static func format(_ headers: [String: String]) -> String {
        "[" + headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// `duration` in milliseconds with one decimal, for example `12.3`.
    /// Adds each of `headers` to `metadata` under `prefix` and its name made lower-case in ASCII only. Two names
    /// that become one key (`É` and `é`, composed or not) keep both values, joined in the order of their names'
    /// bytes: none is lost, and the order is the same every run.
    private static func add(_ headers: [String: String]?, as prefix: String, to metadata: inout [String: String]) {
        guard let headers else { return }
        var collided = false
        for (name, value) in headers where metadata.updateValue(value, forKey: prefix + name.asciiLowercased) != nil {
            collided = true
        }
        guard collided else { return }
        for name in headers.keys { metadata[prefix + name.asciiLowercased] = nil }
        for (name, value) in headers.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            let key = prefix + name.asciiLowercased
            metadata[key] = metadata[key].map { $0 + ", " + value } ?? value
        }
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenthsOfMilliseconds = seconds * 10_000 + attoseconds / 100_000_000_000_000
        let sign = tenthsOfMilliseconds < 0 ? "-" : ""
        let magnitude = tenthsOfMilliseconds.magnitude
        return "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }
}
