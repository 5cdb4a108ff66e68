#if Logging
public import Logging

/// A ``LogSink`` that writes each ``LogRecord`` to a swift-log `Logger` as one structured entry
/// (trait `Logging`).
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
/// ``Middleware/logging(logger:options:clock:)`` is the short way to write the same.
///
/// The entry's message names the event (`HTTP request started`, `… completed`, `… failed`,
/// `… cancelled`), so that entries group well in a log store; the facts are metadata: the record's
/// ``LogRecord/metadata`` (`http.method`, `http.url` redacted, `http.status_code`, `duration_ms`,
/// `error.code`, `error`, `middleware`, and the redacted headers and body preview when the logging
/// options ask for them), plus `attempt` inside a retry layer (the attempt number, from ``RetryContext``). The logger's own metadata (a request ID, say) is kept. Everything in a record is redacted
/// already, so no credential reaches the log handler.
///
/// Levels map one to one (``LogRecord/Level/warning`` is `Logger.Level.warning`, …). A record below the
/// logger's `logLevel` is not accepted, so the middleware does not even build it.
public struct SwiftLogSink: LogSink {
    /// The logger entries are written to.
    public var logger: Logger

    /// Creates a sink.
    ///
    /// - Parameter logger: The logger to write to.
    public init(_ logger: Logger) {
        self.logger = logger
    }

    /// Whether the logger writes entries of `level`.
    ///
    /// - Parameter level: A record's level.
    /// - Returns: `true` when `level` is at least the logger's `logLevel`.
    public func accepts(_ level: LogRecord.Level) -> Bool {
        logger.logLevel <= Logger.Level(level)
    }

    /// Writes `record` to the logger.
    ///
    /// - Parameter record: The record; everything in it is already redacted.
    public func log(_ record: LogRecord) {
        var metadata: Logger.Metadata = [:]
        for (key, value) in record.metadata {
            metadata[key] = .string(value)
        }
        if let attempt = HTTPAttributes.currentAttempt {
            metadata["attempt"] = "\(attempt)"
        }
        logger.log(level: Logger.Level(record.level), Self.message(for: record.event), metadata: metadata)
    }

    static func message(for event: LogRecord.Event) -> Logger.Message {
        switch event {
        case .started: "HTTP request started"
        case .completed: "HTTP request completed"
        case .failed: "HTTP request failed"
        case .cancelled: "HTTP request cancelled"
        }
    }
}

extension LogSink where Self == SwiftLogSink {
    /// Writes records to a swift-log `Logger`.
    ///
    /// - Parameter logger: The logger to write to.
    /// - Returns: A ``SwiftLogSink``.
    public static func swiftLog(_ logger: Logger) -> SwiftLogSink {
        SwiftLogSink(logger)
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
#endif
