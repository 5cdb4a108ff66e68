#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// What ``RetryPolicy/onRetry`` is told before a retry: which attempt comes next, after what delay, and
/// why.
///
/// ```swift
/// policy.onRetry = { event in
///     print("attempt \(event.attempt)/\(event.maximumAttempts) in \(event.delay) after \(event.reason)")
/// }
/// ```
public struct RetryEvent: Sendable {
    /// Why the previous attempt is retried.
    public enum Reason: Sendable, CustomStringConvertible {
        /// The response had a retryable status (returned as a response, or thrown by a validation layer
        /// as ``CourierError/Code/unacceptableStatus``).
        case status(Int)
        /// The attempt threw a retryable error.
        case error(any Error)

        /// `status 503`, or the error's description with secrets redacted (see ``Redaction``).
        public var description: String {
            switch self {
            case .status(let status): "status \(status)"
            case .error(let error): Redaction.redactedText(String(describing: error))
            }
        }
    }

    /// The attempt about to be made: 2 for the first retry.
    public let attempt: Int
    /// The most attempts the policy allows.
    public let maximumAttempts: Int
    /// How long the retry waits before the attempt.
    public let delay: Duration
    /// The delay the server asked for with `Retry-After`, when it did (then ``delay`` is this).
    public let retryAfter: Duration?
    /// Why the previous attempt is retried.
    public let reason: Reason
    /// The request being retried, as the retry layer sees it (layers inside it, such as authentication,
    /// have not added their headers). Print it with ``Redaction`` if it may carry secrets.
    public let request: URLRequest
}
