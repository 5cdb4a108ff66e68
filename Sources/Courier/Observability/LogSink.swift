/// Where the logging middleware sends its records: standard error, swift-log, a test's array, ….
///
/// ```swift
/// struct CollectingSink: LogSink {
///     let records: Locked<[LogRecord]>
///     func log(_ record: LogRecord) { records.withLock { $0.append(record) } }
/// }
/// ```
///
/// ``log(_:)`` is called in the request's task and delays the response while it runs: hand the record
/// off quickly. ``accepts(_:)`` lets the middleware skip building records nobody wants.
public protocol LogSink: Sendable {
    /// Whether records of `level` are wanted. The default accepts every level.
    ///
    /// - Parameter level: A record's level.
    /// - Returns: `false` to have the middleware skip such records without building them.
    func accepts(_ level: LogRecord.Level) -> Bool

    /// Receives one record.
    ///
    /// - Parameter record: The record; everything in it is already redacted.
    func log(_ record: LogRecord)
}

extension LogSink {
    /// Accepts every level.
    ///
    /// - Parameter level: A record's level.
    /// - Returns: `true`.
    public func accepts(_ level: LogRecord.Level) -> Bool { true }
}

/// A ``LogSink`` made from a closure, for ``Middleware/logging(minimumLevel:options:clock:_:)``.
struct ClosureLogSink: LogSink {
    let minimumLevel: LogRecord.Level
    let handler: @Sendable (LogRecord) -> Void

    func accepts(_ level: LogRecord.Level) -> Bool { level >= minimumLevel }

    func log(_ record: LogRecord) { handler(record) }
}
