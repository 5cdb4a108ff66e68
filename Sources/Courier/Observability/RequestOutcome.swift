/// How a request that passed through a middleware ended.
///
/// How many attempts the call made and where its time went come with it as a ``CallSummary``, to a timing
/// closure that takes four arguments (`{ request, outcome, duration, call in … }`), and in a log record's
/// ``LogRecord/call``.
///
/// ```swift
/// .timing { request, outcome, duration in
///     switch outcome {
///     case .success(let status): metrics.record(duration, status: status)
///     case .failure(let error): metrics.recordFailure(duration, error: error)
///     case .cancelled: break
///     }
/// }
/// ```
public enum RequestOutcome: Sendable {
    /// A response arrived, with this status (whatever it is: a 500 that no inner middleware turned into an
    /// error is a success here).
    case success(status: Int)
    /// The rest of the chain threw this error.
    case failure(any Error)
    /// The request was cancelled (the rest of the chain threw `CancellationError`).
    case cancelled

    /// Classifies an error: `CancellationError` is ``cancelled``, anything else ``failure(_:)``.
    init(error: any Error) {
        self = error is CancellationError ? .cancelled : .failure(error)
    }
}
