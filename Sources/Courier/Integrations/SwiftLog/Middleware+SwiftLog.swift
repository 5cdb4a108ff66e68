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
    /// The same as ``logging(to:options:clock:)`` with a ``SwiftLogSink``: one entry when the request ends
    /// (and one when it starts, if ``LoggingOptions/startLevel`` is set), with the method, the redacted URL,
    /// the status, the duration, the error code and the middleware the error came from as metadata, at the
    /// levels ``LoggingOptions`` sets (`info` for a response, `warning` for a status of 400 or more, `error`
    /// for a failure, by default). No secret is logged.
    ///
    /// **Where to put it.** Outermost (or just inside `.counting`), it logs each call once with the time
    /// the caller waited. Inside `.retry`, it logs each attempt, and the entry's `attempt` says which one
    /// (from ``RetryContext``).
    ///
    /// - Parameters:
    ///   - logger: The logger to write to; its metadata (a request ID, say) is kept.
    ///   - options: What to record and at which levels.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(
        logger: Logger,
        options: LoggingOptions = .default,
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        logging(to: SwiftLogSink(logger), options: options, clock: clock)
    }
}
#endif
