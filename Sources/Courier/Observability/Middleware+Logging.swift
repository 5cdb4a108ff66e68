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
    ///     middleware: [.logging(), .retry(.default), .validatingStatus()]
    /// )
    /// // [info] GET https://api.example.com/users/42 → 200 (12.3 ms; head 11.9 ms)
    /// // [error] GET https://api.example.com/users/0 failed: unacceptableStatus (status 503) (6412.5 ms;
    /// //   3 attempts; backoff 400.0 ms, head 6010.2 ms): after 3 attempts over 6.4 s: the status 503 …
    ///
    /// .logging(to: .swiftLog(logger), startLevel: .debug, includesHeaders: true)  // more, to swift-log
    /// ```
    ///
    /// One record per request when it ends (``LogRecord/Event/completed``, ``LogRecord/Event/failed`` or
    /// ``LogRecord/Event/cancelled``), plus one when it starts if `startLevel` is set. A failure's record names
    /// its ``CourierError/Code`` and the middleware it came from, and its error text tells the error's story (the
    /// attempts and the time, for a retried call or a timeout; see ``CourierError/description``). Each record
    /// carries the call's ``CallSummary`` (``LogRecord/call``): the attempts and where the time went — waiting for
    /// a slot, for a token refresh, in backoff, for the response head, for the body — as the layers below
    /// measured it. Secrets never reach the sink: the URL, headers,
    /// error text and body preview are redacted with ``Redaction``. Errors and cancellation are passed on
    /// unchanged.
    ///
    /// Placed outermost (or just inside a counter) it sees each call once, with its total time; placed
    /// inside a retry it logs every attempt.
    ///
    /// - Parameters:
    ///   - sink: Where records go; standard error, from `info` up, by default.
    ///   - level: The level of a response with a status below 400, and of a cancellation.
    ///   - errorStatusLevel: The level of a response with a status of 400 or more that no inner middleware
    ///     turned into an error.
    ///   - failureLevel: The level of a failure (the rest of the chain threw).
    ///   - startLevel: The level of a record made when a request starts; `nil`, the default, makes none.
    ///   - includesHeaders: Whether records carry the request and response headers (sensitive values redacted).
    ///   - includesBodyPreview: Whether records carry the start of the response body (redacted).
    ///   - clock: The clock that measures durations.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(
        to sink: LogSink = .standardError,
        level: LogRecord.Level = .info,
        errorStatusLevel: LogRecord.Level = .warning,
        failureLevel: LogRecord.Level = .error,
        startLevel: LogRecord.Level? = nil,
        includesHeaders: Bool = false,
        includesBodyPreview: Bool = false,
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        let logger = RequestLogger(
            sink: sink,
            level: level,
            errorStatusLevel: errorStatusLevel,
            failureLevel: failureLevel,
            startLevel: startLevel,
            includesHeaders: includesHeaders,
            includesBodyPreview: includesBodyPreview
        )
        let stopwatch = CallRecord.stopwatch(on: clock)
        return Middleware(name: "logging", waitsOnlyWithinDeadline: true) { request, next in
            logger.started(request)
            let start = clock.now
            // What the layers below tell about the call: attempts, waits (see `CallSummary`).
            let record = CallRecord(parent: CallRecord.current, stopwatch: stopwatch)
            do {
                let (data, response) = try await CallRecord.$current.withValue(record) { try await next(request) }
                logger.completed(
                    request,
                    data: data,
                    response: response,
                    duration: start.duration(to: clock.now),
                    call: record
                )
                return (data, response)
            } catch {
                logger.failed(request, error: error, duration: start.duration(to: clock.now), call: record)
                throw error
            }
        }
    }
}

/// Builds the records for the logging middleware; made once per middleware.
private struct RequestLogger: Sendable {
    let sink: LogSink
    let level: LogRecord.Level
    let errorStatusLevel: LogRecord.Level
    let failureLevel: LogRecord.Level
    let startLevel: LogRecord.Level?
    let includesHeaders: Bool
    let includesBodyPreview: Bool

    func started(_ request: URLRequest) {
        guard let level = startLevel, sink.accepts(level) else { return }
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

    func completed(
        _ request: URLRequest,
        data: Data,
        response: HTTPURLResponse,
        duration: Duration,
        call: CallRecord
    ) {
        let level = response.statusCode >= 400 ? errorStatusLevel : self.level
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
                responseHeaders: includesHeaders ? Redaction.redactedHeaders(response) : nil,
                bodyPreview: includesBodyPreview && !data.isEmpty ? Redaction.bodyPreview(data) : nil,
                call: call.snapshot
            )
        )
    }

    func failed(_ request: URLRequest, error: any Error, duration: Duration, call: CallRecord) {
        // A timeout above that cancelled the request at its deadline is a failure (`timedOut`), not a cancellation.
        let error = Deadline.seenBelow(error, request: request)
        if error is CancellationError {
            guard sink.accepts(level) else { return }
            sink.log(
                LogRecord(
                    level: level,
                    event: .cancelled,
                    method: method(of: request),
                    url: url(of: request),
                    duration: duration,
                    requestHeaders: requestHeaders(of: request),
                    call: call.snapshot
                )
            )
            return
        }
        guard sink.accepts(failureLevel) else { return }
        let courierError = error as? CourierError
        let responseHeaders = courierError.flatMap { $0.statusCode == nil ? nil : $0.responseHeaders }
        sink.log(
            LogRecord(
                level: failureLevel,
                event: .failed,
                method: method(of: request),
                url: url(of: request),
                statusCode: courierError?.statusCode,
                duration: duration,
                errorCode: courierError?.code,
                error: describe(error),
                middleware: courierError?.middleware,
                requestHeaders: requestHeaders(of: request),
                responseHeaders: includesHeaders ? responseHeaders : nil,
                bodyPreview: includesBodyPreview ? courierError?.bodyPreview : nil,
                call: call.snapshot
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
        guard includesHeaders else { return nil }
        return Redaction.redactedHeaders(request.allHTTPHeaderFields ?? [:])
    }

    private func describe(_ error: any Error) -> String {
        guard let error = error as? CourierError else {
            return Redaction.redactedText("\(type(of: error)): \(String(describing: error))")
        }
        var text = error.story.map { "\($0): " } ?? ""
        text += Redaction.redactedText(error.message)
        if let underlying = error.underlying {
            text += " (underlying: \(TransportFailure.describeUnderlying(underlying)))"
        }
        return text
    }
}
