import Foundation

/// Where the logging middleware sends its records: standard error (``standardError``, the default), a swift-log
/// `Logger` (`.swiftLog(logger)`, trait `Logging`), or a closure of yours.
///
/// ```swift
/// let records = Locked<[LogRecord]>([])
/// let keeping = LogSink { record in records.withLock { $0.append(record) } }
/// let client = Client(baseURL: base, middleware: [.logging(to: keeping)])
/// ```
///
/// The closure runs in the request's task and delays the response while it runs: hand the record off quickly.
/// The middleware does not even build a record below ``minimumLevel``.
public struct LogSink: Sendable {
    /// The least important level the sink takes; records below it are not built.
    public var minimumLevel: LogRecord.Level

    private let write: @Sendable (LogRecord) -> Void

    /// Creates a sink that hands each record of `minimumLevel` or above to `write`.
    public init(minimumLevel: LogRecord.Level = .trace, _ write: @escaping @Sendable (LogRecord) -> Void) {
        self.minimumLevel = minimumLevel
        self.write = write
    }

    /// Whether the sink takes records of `level`.
    func accepts(_ level: LogRecord.Level) -> Bool {
        level >= minimumLevel
    }

    /// Hands `record` to the sink, unless its level is below ``minimumLevel``.
    public func log(_ record: LogRecord) {
        guard accepts(record.level) else { return }
        write(record)
    }

    /// Writes each record's ``LogRecord/description`` as one line to standard error, from `info` up.
    public static var standardError: LogSink {
        standardError(minimumLevel: .info)
    }

    /// Writes each record's ``LogRecord/description`` as one line to standard error, from `minimumLevel` up. Each
    /// line is a single `write`, so lines from concurrent requests do not mix.
    public static func standardError(minimumLevel: LogRecord.Level) -> LogSink {
        LogSink(minimumLevel: minimumLevel) { record in
            FileHandle.standardError.write(Data((record.description + "\n").utf8))
        }
    }
}
