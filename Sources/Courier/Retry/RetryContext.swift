/// Which attempt of a retried call is running, for the layers inside ``Middleware/retry(_:clock:)``.
///
/// The retry layer sets ``current`` around every attempt, so logging and metrics middleware placed inside
/// it (and the transport) can report the attempt:
///
/// ```swift
/// Middleware(name: "attempt-header") { request, next in
///     var request = request
///     request.setValue("\(RetryContext.attempt)", forHTTPHeaderField: "X-Attempt")
///     return try await next(request)
/// }
/// ```
public struct RetryContext: Sendable, Hashable {
    /// The context of the innermost retry layer around the current task, or `nil` outside any.
    @TaskLocal public static var current: RetryContext?

    /// The attempt running now: 1 for the first, 2 for the first retry, ….
    public let attempt: Int
    /// The most attempts the retry layer allows.
    public let maximumAttempts: Int

    /// - Parameters:
    ///   - attempt: The attempt, from 1.
    ///   - maximumAttempts: The most attempts allowed.
    public init(attempt: Int, maximumAttempts: Int) {
        self.attempt = attempt
        self.maximumAttempts = maximumAttempts
    }

    /// The current attempt number: ``current``'s attempt, or 1 outside any retry layer.
    public static var attempt: Int { current?.attempt ?? 1 }

    /// Whether the current attempt is a retry (attempt 2 or later).
    public var isRetry: Bool { attempt > 1 }
}
