#if Logging
import Foundation
public import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Writes one structured line to a swift-log `Logger` for every request that passes through it
    /// (trait `Logging`).
    ///
    /// ```swift
    /// import Logging
    ///
    /// let logger = Logger(label: "com.example.api-client")
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.logging(logger: logger), .retry(.default), .validatingStatus()]
    /// )
    /// // info: Request completed http.request.method=GET url.full=https://api.example.com/users/42
    /// //       http.response.status_code=200 duration_ms=12.3
    /// ```
    ///
    /// The message is fixed (`Request completed`, `Request failed`, `Request cancelled`); the facts are
    /// metadata, present when known:
    ///
    /// | Key | Value |
    /// | --- | --- |
    /// | `http.request.method` | `GET`, `POST`, … |
    /// | `url.full` | the URL, redacted with ``Redaction`` (no user-info, no sensitive query values) |
    /// | `http.response.status_code` | `200`; also for an unacceptable-status error |
    /// | `duration_ms` | how long the rest of the chain took, in milliseconds (`12.3`) |
    /// | `attempt` | the attempt number, when a retry layer around this one says which attempt runs |
    /// | `error.type` | the ``CourierError/Code`` (`timedOut`, …), or the error's type name |
    /// | `error.message` | the error's message, redacted |
    /// | `middleware` | the middleware the error came from (``CourierError/middleware``) |
    ///
    /// A failure is also passed to the log handler as the entry's error: a ``CourierError`` as it is (its
    /// description is redacted), any other error as a redacted copy. No header, body or credential is ever
    /// logged.
    ///
    /// **Levels.** A response below 400 and a cancellation are logged at `level`, a response of 400 or more
    /// (that no inner layer turned into an error) at `errorStatusLevel`, a failure at `failureLevel`. A line
    /// below the logger's own `logLevel` costs no formatting and no redaction.
    ///
    /// **Where to put it.** Outermost (or just inside `.counting`), it logs each call once with the time the
    /// caller waited. Inside `.retry`, it logs each attempt, with its number in `attempt`. Errors and
    /// cancellation pass through unchanged.
    ///
    /// - Parameters:
    ///   - logger: The logger to write to; its metadata (a request ID, say) is kept.
    ///   - level: The level of a response below 400, and of a cancellation; `.info` by default.
    ///   - errorStatusLevel: The level of a response of 400 or more; `.warning` by default.
    ///   - failureLevel: The level of a failure (the rest of the chain threw); `.error` by default.
    ///   - clock: The clock that measures durations; `ContinuousClock` by default.
    /// - Returns: A middleware named `"logging"`.
    public static func logging(
        logger: Logger,
        level: Logger.Level = .info,
        errorStatusLevel: Logger.Level = .warning,
        failureLevel: Logger.Level = .error,
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        let writer = RequestLogWriter(
            logger: logger,
            level: level,
            errorStatusLevel: errorStatusLevel,
            failureLevel: failureLevel
        )
        return Middleware(name: "logging") { request, next in
            let start = clock.now
            do {
                let (data, response) = try await next(request)
                writer.completed(request, response: response, duration: start.duration(to: clock.now))
                return (data, response)
            } catch {
                writer.failed(request, error: error, duration: start.duration(to: clock.now))
                throw error
            }
        }
    }
}

/// Writes the log lines of the swift-log middleware; made once per middleware.
struct RequestLogWriter: Sendable {
    let logger: Logger
    let level: Logger.Level
    let errorStatusLevel: Logger.Level
    let failureLevel: Logger.Level

    func completed(_ request: URLRequest, response: HTTPURLResponse, duration: Duration) {
        let level = response.statusCode >= 400 ? errorStatusLevel : level
        guard logger.logLevel <= level else { return }
        var metadata = Self.metadata(of: request, duration: duration)
        metadata[HTTPAttributes.statusCode] = "\(response.statusCode)"
        logger.log(level: level, "Request completed", metadata: metadata)
    }

    func failed(_ request: URLRequest, error: any Error, duration: Duration) {
        if HTTPAttributes.isCancellation(error) {
            guard logger.logLevel <= level else { return }
            logger.log(level: level, "Request cancelled", metadata: Self.metadata(of: request, duration: duration))
            return
        }
        guard logger.logLevel <= failureLevel else { return }
        var metadata = Self.metadata(of: request, duration: duration)
        metadata[HTTPAttributes.errorType] = "\(HTTPAttributes.errorType(of: error))"
        let logged: any Error
        if let error = error as? CourierError {
            metadata["error.message"] = "\(Redaction.redactedText(error.message))"
            if let statusCode = error.statusCode { metadata[HTTPAttributes.statusCode] = "\(statusCode)" }
            if let middleware = error.middleware { metadata["middleware"] = "\(middleware)" }
            logged = error
        } else {
            let redacted = RedactedError(error)
            metadata["error.message"] = "\(redacted.description)"
            logged = redacted
        }
        logger.log(level: failureLevel, "Request failed", error: logged, metadata: metadata)
    }

    private static func metadata(of request: URLRequest, duration: Duration) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            HTTPAttributes.method: "\(HTTPAttributes.method(of: request))",
            "duration_ms": "\(milliseconds(duration))",
        ]
        if let url = request.url {
            metadata[HTTPAttributes.urlFull] = "\(Redaction.redactedURL(url))"
        }
        if let attempt = HTTPAttributes.currentAttempt {
            metadata["attempt"] = "\(attempt)"
        }
        return metadata
    }

    /// `duration` in milliseconds with one decimal, for example `12.3`.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10_000 + attoseconds / 100_000_000_000_000
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(tenths.magnitude / 10).\(tenths.magnitude % 10)"
    }
}
#endif
