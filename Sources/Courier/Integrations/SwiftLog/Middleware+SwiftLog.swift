#if Logging
public import Logging

extension Middleware {
    /// Logs each request as one structured entry to a swift-log `Logger` (trait `Logging`).
    ///
    /// ```swift
    /// import Logging
    ///
    /// let logger = Logger(label: "com.example.api-client")
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.logging(logger: logger), .retry(.default), .validatingStatus()]
    /// )
    /// ```
    ///
    /// The short form of `.logging(to: .swiftLog(logger))` (see ``LogSink/swiftLog(_:)``); write that one to set
    /// levels or include headers. One entry when the request ends, with the method, the redacted URL, the
    /// status, the duration, the error code and the middleware the error came from as metadata: `info` for a
    /// response, `warning` for a status of 400 or more, `error` for a failure. No secret is logged.
    ///
    /// **Where to put it.** Outermost (or just inside `.counting`), it logs each call once with the time
    /// the caller waited. Inside `.retry`, it logs each attempt, and the entry's `attempt` says which one
    /// (from ``RetryContext``).
    ///
    /// - Parameter logger: The logger to write to; its metadata (a request ID, say) is kept.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(logger: Logger) -> Middleware {
        logging(to: .swiftLog(logger))
    }
}
#endif
