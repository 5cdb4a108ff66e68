#if Logging
public import Logging

extension CacheEvent {
    /// An `onEvent` callback that logs each cache event to `logger`: the message `HTTP cache <kind>`, with
    /// the metadata `cache.event`, `http.request.method` and `url.full` (redacted, see ``Redaction``).
    ///
    /// ```swift
    /// let cache = HTTPCache(onEvent: CacheEvent.logging(to: logger))
    /// ```
    ///
    /// - Parameters:
    ///   - logger: The logger that receives the entries.
    ///   - level: The level of the entries; `.debug` by default.
    public static func logging(to logger: Logger, level: Logger.Level = .debug) -> @Sendable (CacheEvent) -> Void {
        { event in
            logger.log(
                level: level,
                "HTTP cache \(event.kind.rawValue)",
                metadata: [
                    "cache.event": .string(event.kind.rawValue),
                    HTTPAttributes.method: .string(event.method),
                    HTTPAttributes.urlFull: .string(Redaction.redactedURL(event.url)),
                ]
            )
        }
    }
}
#endif
