/// Where one call's time went: how many attempts it made and how long it waited for what.
///
/// The logging middleware puts it in each ``LogRecord`` (``LogRecord/call``), and the timing middleware hands
/// it to a report closure that takes four arguments:
///
/// ```swift
/// .timing { request, outcome, duration, call in
///     metrics.record(duration, attempts: call.attempts, waitingForSlot: call.waitingForSlot)
/// }
/// ```
///
/// The layers below the observing middleware fill it in as things happen, and only then: a retry counts its
/// attempts and sleeps, a concurrency or rate limiter the time a request queued for a slot, a
/// ``TokenRefresher`` the time a request waited for a refresh, and the end of the chain the time the transport
/// took. Each layer measures on its own clock (in practice the same one for every layer of a client, a
/// `ManualClock` in tests). The waits do not add up to the call's whole duration: what is left is the time the
/// layers themselves took, and the parts of an attempt a per-attempt timeout cut short.
public struct CallSummary: Sendable, Hashable, CustomStringConvertible {
    /// How many attempts the call made: 1, or the last attempt a ``Middleware/retry(_:clock:)`` layer started.
    public var attempts: Int
    /// How long the call waited for a slot: queued in a ``ConcurrencyLimiter`` or a ``RateLimiter``.
    public var waitingForSlot: Duration
    /// How long the call waited for a ``TokenRefresher`` to refresh its token (before sending, or after a
    /// rejection).
    public var waitingForRefresh: Duration
    /// How long the retry layer slept between attempts.
    public var backoff: Duration
    /// How long the transport took from sending a request to the response head, summed over attempts. A
    /// transport that does not tell the head from the body (a custom one) counts its whole exchange here;
    /// `AsyncHTTPClientTransport` and `MockTransport` (for a streamed answer) tell them apart.
    public var waitingForHead: Duration
    /// How long the transport took from the response head to the body's last byte, summed over attempts.
    public var waitingForBody: Duration

    /// Creates a summary; everything is zero and the call made one attempt unless you say otherwise.
    public init(
        attempts: Int = 1,
        waitingForSlot: Duration = .zero,
        waitingForRefresh: Duration = .zero,
        backoff: Duration = .zero,
        waitingForHead: Duration = .zero,
        waitingForBody: Duration = .zero
    ) {
        self.attempts = attempts
        self.waitingForSlot = waitingForSlot
        self.waitingForRefresh = waitingForRefresh
        self.backoff = backoff
        self.waitingForHead = waitingForHead
        self.waitingForBody = waitingForBody
    }

    /// The attempts, then each wait that is not zero, for example
    /// `3 attempts; slot 12.0 ms, refresh 200.0 ms, backoff 400.0 ms, head 31.0 ms, body 2.5 ms`.
    public var description: String {
        var text = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
        let waits = self.waits
        if !waits.isEmpty {
            text += "; " + waits.joined(separator: ", ")
        }
        return text
    }

    /// Each wait that is not zero, named, in the order of ``description``.
    private var namedWaits: [(name: String, duration: Duration)] {
        [
            ("slot", waitingForSlot), ("refresh", waitingForRefresh), ("backoff", backoff),
            ("head", waitingForHead), ("body", waitingForBody),
        ]
        .filter { $0.duration != .zero }
    }

    /// Each wait that is not zero as text, for example `backoff 400.0 ms`.
    var waits: [String] {
        namedWaits.map { "\($0.name) \(LogRecord.milliseconds($0.duration)) ms" }
    }

    /// The same facts as key-value pairs for a log entry: `attempts`, and `wait.slot_ms`, `wait.refresh_ms`,
    /// `wait.backoff_ms`, `wait.head_ms`, `wait.body_ms` for each wait that is not zero.
    var metadata: [(String, String)] {
        [("attempts", String(attempts))]
            + namedWaits.map { ("wait.\($0.name)_ms", LogRecord.milliseconds($0.duration)) }
    }
}
