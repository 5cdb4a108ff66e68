import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Logs each request as a structured, redacted ``LogRecord``.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.logging(to: .standardError), .retry(.default), .validatingStatus()]
    /// )
    /// // [info] GET https://api.example.com/users/42 → 200 (12.3 ms)
    /// // [error] GET https://api.example.com/users/0 failed: unacceptableStatus (status 404) (3.1 ms): …
    /// ```
    ///
    /// One record per request when it ends (``LogRecord/Event/completed``, ``LogRecord/Event/failed`` or
    /// ``LogRecord/Event/cancelled``), plus one when it starts if ``LoggingOptions/startLevel`` is set.
    /// A failure's record names its ``CourierError/Code`` and the middleware it came from. Secrets never
    /// reach the sink: the URL, headers, error text and body preview are redacted with ``Redaction``.
    /// Errors and cancellation are passed on unchanged.
    ///
    /// Placed outermost (or just inside a counter) it sees each call once, with its total time; placed
    /// inside a retry it logs every attempt.
    ///
    /// - Parameters:
    ///   - sink: Where records go; ``StandardErrorLogSink`` by default.
    ///   - options: What to record and at which levels.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(
        to sink: some LogSink = StandardErrorLogSink(),
        options: LoggingOptions = .default,
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        let logger = RequestLogger(sink: sink, options: options)
        return Middleware(name: "logging") { request, next in
            logger.started(request)
            let start = clock.now
            do {
                let (data, response) = try await next(request)
                logger.completed(request, data: data, response: response, duration: start.duration(to: clock.now))
                return (data, response)
            } catch {
                logger.failed(request, error: error, duration: start.duration(to: clock.now))
                throw error
            }
        }
    }

    /// Logs each request as a structured, redacted ``LogRecord`` handed to a closure.
    ///
    /// ```swift
    /// .logging(minimumLevel: .warning) { record in
    ///     myLogger.write(record.description)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - minimumLevel: The least important level passed to `log`; records below it are not built.
    ///   - options: What to record and at which levels.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    ///   - log: Receives each record, in the request's task; keep it short.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(
        minimumLevel: LogRecord.Level = .trace,
        options: LoggingOptions = .default,
        clock: some Clock<Duration> = ContinuousClock(),
        _ log: @escaping @Sendable (LogRecord) -> Void
    ) -> Middleware {
        logging(to: ClosureLogSink(minimumLevel: minimumLevel, handler: log), options: options, clock: clock)
    }
}

/// Builds the records for the logging middleware; made once per middleware.
private struct RequestLogger<Sink: LogSink>: Sendable {
    let sink: Sink
    let options: LoggingOptions

    func started(_ request: URLRequest) {
        guard let level = options.startLevel, sink.accepts(level) else { return }
        sink.log(
            LogRecord(
                level: level,
                event: .started,
                method: method(of: request),
                url: url(of: request),
                requestHeaders: requestHeaders(of: request)
            )
        )
    }

    func completed(_ request: URLRequest, data: Data, response: HTTPURLResponse, duration: Duration) {
        let level = response.statusCode >= 400 ? options.errorStatusLevel : options.level
        guard sink.accepts(level) else { return }
        sink.log(
            LogRecord(
                level: level,
                event: .completed,
                method: method(of: request),
                url: url(of: request),
                statusCode: response.statusCode,
                duration: duration,
                requestHeaders: requestHeaders(of: request),
                responseHeaders: options.includesHeaders ? Redaction.redactedHeaders(response) : nil,
                bodyPreview: options.includesBodyPreview && !data.isEmpty ? Redaction.bodyPreview(data) : nil
            )
        )
    }

    func failed(_ request: URLRequest, error: any Error, duration: Duration) {
        if error is CancellationError {
            guard sink.accepts(options.level) else { return }
            sink.log(
                LogRecord(
                    level: options.level,
                    event: .cancelled,
                    method: method(of: request),
                    url: url(of: request),
                    duration: duration,
                    requestHeaders: requestHeaders(of: request)
                )
            )
            return
        }
        guard sink.accepts(options.failureLevel) else { return }
        let courierError = error as? CourierError
        let responseHeaders = courierError.flatMap { $0.statusCode == nil ? nil : $0.responseHeaders }
        sink.log(
            LogRecord(
                level: options.failureLevel,
                event: .failed,
                method: method(of: request),
                url: url(of: request),
                statusCode: courierError?.statusCode,
                duration: duration,
                errorCode: courierError?.code,
                error: describe(error),
                middleware: courierError?.middleware,
                requestHeaders: requestHeaders(of: request),
                responseHeaders: options.includesHeaders ? responseHeaders : nil,
                bodyPreview: options.includesBodyPreview ? courierError?.bodyPreview : nil
            )
        )
    }

    private func method(of request: URLRequest) -> String {
        RequestValidation.printableMethod(of: request)
    }

    private func url(of request: URLRequest) -> String {
        request.url.map(Redaction.redactedURL) ?? "<no URL>"
    }

    private func requestHeaders(of request: URLRequest) -> [String: String]? {
        guard options.includesHeaders else { return nil }
        return Redaction.redactedHeaders(request.allHTTPHeaderFields ?? [:])
    }

    private func describe(_ error: any Error) -> String {
        guard let error = error as? CourierError else {
            return Redaction.redactedText("\(type(of: error)): \(String(describing: error))")
        }
        var text = Redaction.redactedText(error.message)
        if let underlying = error.underlying {
            text += " (underlying: \(Redaction.redactedText(String(describing: underlying))))"
        }
        return text
    }
}
