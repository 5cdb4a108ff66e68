#if Logging
public import Logging

extension LogSink {
    /// Writes each ``LogRecord`` to a swift-log `Logger` as one structured entry (trait `Logging`).
    ///
    /// ```swift
    /// import Logging
    ///
    /// let logger = Logger(label: "com.example.api-client")
    /// let client = Client(baseURL: base, middleware: [.logging(to: .swiftLog(logger)), .validatingStatus()])
    /// // info: HTTP request completed duration_ms=12.3 event=completed http.method=GET
    /// //       http.status_code=200 http.url=https://api.example.com/users/42
    /// ```
    ///
    /// ``Middleware/logging(logger:)`` is the short way to write the same with the default levels.
    ///
    /// The entry's message names the event (`HTTP request started`, `… completed`, `… failed`,
    /// `… cancelled`), so that entries group well in a log store; the facts are metadata: the record's
    /// ``LogRecord/metadata`` (`http.method`, `http.url` redacted, `http.status_code`, `duration_ms`,
    /// `error.code`, `error`, `middleware`, `attempts` and the `wait.*_ms` of the call's ``CallSummary``, and the
    /// redacted headers and body preview when the logging middleware is asked for them), plus `attempt` inside a
    /// retry layer (the attempt number, from
    /// ``RetryContext``). The logger's own metadata (a request ID, say) is kept. Everything in a record is
    /// redacted already, so no credential reaches the log handler.
    ///
    /// Levels map one to one (``LogRecord/Level/warning`` is `Logger.Level.warning`, …). The sink's
    /// ``minimumLevel`` is the logger's `logLevel`, so the middleware does not even build a record the logger
    /// would drop.
    public static func swiftLog(_ logger: Logger) -> LogSink {
        LogSink(minimumLevel: LogRecord.Level(logger.logLevel)) { record in
            var metadata: Logger.Metadata = [:]
            for (key, value) in record.metadata {
                metadata[key] = .string(value)
            }
            if let attempt = HTTPAttributes.currentAttempt {
                metadata["attempt"] = "\(attempt)"
            }
            logger.log(level: Logger.Level(record.level), message(for: record.event), metadata: metadata)
        }
    }

    private static func message(for event: LogRecord.Event) -> Logger.Message {
        switch event {
        case .started: "HTTP request started"
        case .completed: "HTTP request completed"
        case .failed: "HTTP request failed"
        case .cancelled: "HTTP request cancelled"
        }
    }
}

extension Logger.Level {
    /// The swift-log level of the same name as `level`.
    init(_ level: LogRecord.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}

extension LogRecord.Level {
    /// The record level of the same name as swift-log's `level`.
    init(_ level: Logger.Level) {
        self = Self.allCases.first { Logger.Level($0) == level }!
    }
}
#endif
