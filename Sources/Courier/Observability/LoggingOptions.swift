/// What the logging middleware records and at which levels.
///
/// ```swift
/// var options = LoggingOptions()
/// options.startLevel = .debug        // also log each request as it starts
/// options.includesHeaders = true     // redacted
/// let logging = Middleware.logging(to: .standardError, options: options)
/// ```
public struct LoggingOptions: Sendable, Hashable {
    /// The level of a response with a status below 400, and of a cancellation.
    public var level: LogRecord.Level
    /// The level of a response with a status of 400 or more that no inner middleware turned into an error.
    public var errorStatusLevel: LogRecord.Level
    /// The level of a failure (the rest of the chain threw).
    public var failureLevel: LogRecord.Level
    /// The level of a record made when a request starts, or `nil` (the default) for no such record.
    public var startLevel: LogRecord.Level?
    /// Whether records carry the request and response headers (sensitive values redacted).
    public var includesHeaders: Bool
    /// Whether records carry the start of the response body (redacted).
    public var includesBodyPreview: Bool

    /// Creates options.
    ///
    /// - Parameters:
    ///   - level: The level of a response with a status below 400, and of a cancellation.
    ///   - errorStatusLevel: The level of a response with a status of 400 or more.
    ///   - failureLevel: The level of a failure.
    ///   - startLevel: The level of a record made when a request starts, or `nil` for none.
    ///   - includesHeaders: Whether records carry the headers, redacted.
    ///   - includesBodyPreview: Whether records carry the start of the response body, redacted.
    public init(
        level: LogRecord.Level = .info,
        errorStatusLevel: LogRecord.Level = .warning,
        failureLevel: LogRecord.Level = .error,
        startLevel: LogRecord.Level? = nil,
        includesHeaders: Bool = false,
        includesBodyPreview: Bool = false
    ) {
        self.level = level
        self.errorStatusLevel = errorStatusLevel
        self.failureLevel = failureLevel
        self.startLevel = startLevel
        self.includesHeaders = includesHeaders
        self.includesBodyPreview = includesBodyPreview
    }

    /// One record per request: `info` for a response, `warning` for a status of 400 or more, `error`
    /// for a failure; no headers, no bodies.
    public static let `default` = LoggingOptions()
}
