import Foundation

/// A ``LogSink`` that writes each record's ``LogRecord/description`` as one line to standard error.
///
/// ```swift
/// let client = Client(baseURL: base, middleware: [.logging(to: .standardError)])
/// let verbose = Middleware.logging(to: StandardErrorLogSink(minimumLevel: .debug))
/// ```
public struct StandardErrorLogSink: LogSink {
    /// The least important level written.
    public var minimumLevel: LogRecord.Level

    /// Creates a sink.
    ///
    /// - Parameter minimumLevel: The least important level written; `.info` by default.
    public init(minimumLevel: LogRecord.Level = .info) {
        self.minimumLevel = minimumLevel
    }

    /// Whether `level` is at least ``minimumLevel``.
    ///
    /// - Parameter level: A record's level.
    /// - Returns: `true` when records of `level` are written.
    public func accepts(_ level: LogRecord.Level) -> Bool {
        level >= minimumLevel
    }

    /// Writes `record` as one line (a single `write`, so lines from concurrent requests do not mix).
    ///
    /// - Parameter record: The record.
    public func log(_ record: LogRecord) {
        guard accepts(record.level) else { return }
        FileHandle.standardError.write(Data((record.description + "\n").utf8))
    }
}

extension LogSink where Self == StandardErrorLogSink {
    /// Writes records of level `info` and above to standard error.
    public static var standardError: StandardErrorLogSink { StandardErrorLogSink() }
}
