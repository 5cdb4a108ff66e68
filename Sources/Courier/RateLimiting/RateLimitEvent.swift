/// What ``RateLimitPolicy/onEvent`` is told: a request waited for its slot or was refused, or a response
/// changed what the limiter knows of a quota.
///
/// ```swift
/// policy.onEvent = { event in
///     if case .waited(let partition, let duration) = event { print("waited \(duration) for \(partition)") }
/// }
/// ```
public enum RateLimitEvent: Sendable, Equatable, CustomStringConvertible {
    /// Why a request was refused.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// The partition's queue was full.
        case queueFull
        /// The request would have waited longer than ``RateLimitPolicy/maximumWait``.
        case waitTooLong
        /// The slot opens after the call's deadline (``Deadline/current``).
        case deadline

        /// `queueFull`, `waitTooLong` or `deadline`.
        public var description: String {
            switch self {
            case .queueFull: "queueFull"
            case .waitTooLong: "waitTooLong"
            case .deadline: "deadline"
            }
        }
    }

    /// A request waited `duration` for its slot, then was sent.
    case waited(partition: String, duration: Duration)
    /// A request was refused without being sent.
    case rejected(partition: String, reason: Reason)
    /// A response said how much of the quota is left: `limit` per window (when known), `remaining`
    /// (after the requests still in flight), and the time until the window resets (when known).
    case updated(partition: String, limit: Int?, remaining: Int, resetIn: Duration?)
    /// The server answered `429` or `503` (`status`); `retryAfter` is what it asked for, when it did.
    case throttled(partition: String, status: Int, retryAfter: Duration?)
    /// The ``RateLimitStore`` failed to reserve slots of a ``RateLimitPolicy/SharedLimit`` (`message`, with
    /// secrets redacted); the partition's requests go without shared slots for one window.
    case storeFailed(partition: String, message: String)

    /// The partition the event is about.
    public var partition: String {
        switch self {
        case .waited(let partition, _), .rejected(let partition, _), .updated(let partition, _, _, _),
            .throttled(let partition, _, _), .storeFailed(let partition, _):
            partition
        }
    }

    /// ``partition`` as it may be printed: with secrets removed (a partition function that keys by a credential
    /// registered with ``Redaction/registerSecret(_:)``, or one Courier holds), as in ``description``, the
    /// swift-log entry and the metric's dimension.
    public var printablePartition: String {
        Redaction.redactedText(partition)
    }

    /// One line, for example `waited 2.0 seconds for api.example.com:443`; the partition is ``printablePartition``.
    public var description: String {
        let partition = printablePartition
        return switch self {
        case .waited(_, let duration):
            "waited \(duration) for \(partition)"
        case .rejected(_, let reason):
            "rejected (\(reason)) for \(partition)"
        case .updated(_, let limit, let remaining, let resetIn):
            "\(remaining)/\(limit.map(String.init) ?? "?") left for \(partition)"
                + (resetIn.map { ", resets in \($0)" } ?? "")
        case .throttled(_, let status, let retryAfter):
            "throttled (\(status)) by \(partition)" + (retryAfter.map { ", retry after \($0)" } ?? "")
        case .storeFailed(_, let message):
            "the rate-limit store failed for \(partition) (\(message)); pacing without the shared limit for one window"
        }
    }
}
