#if Logging
public import Logging

extension RateLimitEvent {
    /// Writes the event to a swift-log `Logger` as one structured entry (trait `Logging`).
    ///
    /// ```swift
    /// var policy = RateLimitPolicy()
    /// policy.onEvent = { event in event.log(to: logger) }
    /// // debug: Rate limit wait duration_ms=2000.0 rate_limit.partition=api.example.com:443
    /// ```
    ///
    /// Waits and quota updates are `debug`; a `429`/`503` from the server is `notice`; a request the limiter
    /// refused and a failure of the shared store are `warning`. The facts are metadata: `rate_limit.partition`
    /// (``printablePartition``: secrets removed),
    /// and `duration_ms`, `reason`, `limit`, `remaining`, `reset_in_ms`, `http.status_code`, `retry_after_ms` or
    /// `error` as the event has them.
    public func log(to logger: Logger) {
        var metadata: Logger.Metadata = ["rate_limit.partition": .string(printablePartition)]
        switch self {
        case .waited(_, let duration):
            metadata["duration_ms"] = .string(LogRecord.milliseconds(duration))
            logger.debug("Rate limit wait", metadata: metadata)
        case .rejected(_, let reason):
            metadata["reason"] = .string(reason.description)
            logger.warning("Rate limit refused a request", metadata: metadata)
        case .updated(_, let limit, let remaining, let resetIn):
            if let limit { metadata["limit"] = .string(String(limit)) }
            metadata["remaining"] = .string(String(remaining))
            if let resetIn { metadata["reset_in_ms"] = .string(LogRecord.milliseconds(resetIn)) }
            logger.debug("Rate limit updated", metadata: metadata)
        case .throttled(_, let status, let retryAfter):
            metadata["http.status_code"] = .string(String(status))
            if let retryAfter { metadata["retry_after_ms"] = .string(LogRecord.milliseconds(retryAfter)) }
            logger.notice("Rate limited by the server", metadata: metadata)
        case .storeFailed(_, let message):
            metadata["error"] = .string(message)
            logger.warning(
                "Rate limit store failed; pacing without the shared limit for one window",
                metadata: metadata
            )
        }
    }
}
#endif
