extension CourierError {
    /// Which timeout expired: the whole call's or one attempt's.
    ///
    /// A timeout inside a ``Middleware/retry(_:clock:)`` layer bounds one ``attempt``; any other (outside the
    /// retry, a ``Request/timeout``, or the deadline of an enclosing call that an inner timeout ran into) bounds
    /// the whole ``call``. ``CourierError/code`` is ``Code/timedOut`` either way, so `catch` sites that switch on
    /// it need not care.
    public struct TimeoutScope: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case call
            case attempt
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The timeout bounded the whole call, retries and backoff included.
        public static let call = TimeoutScope(.call)
        /// The timeout bounded one attempt of a retried call.
        public static let attempt = TimeoutScope(.attempt)

        /// The scope's stable name: `call` or `attempt`.
        public var description: String { base.rawValue }
    }

    /// How the call got to this error, as the description tells it before the message: `after 3 attempts over
    /// 6.4 s` for a call that was retried, `after 10.0 s` for a timeout of a call that made one attempt; `nil`
    /// when there is nothing to tell (one attempt, and not a timeout).
    var story: String? {
        guard let elapsed else { return nil }
        let attempts = self.attempts ?? 1
        if attempts > 1 {
            return "after \(attempts) attempts over \(Self.shortText(elapsed))"
        }
        guard timeoutScope != nil else { return nil }
        return "after \(Self.shortText(elapsed))"
    }

    /// Returns a copy that tells how the call got here: `attempts` made over `elapsed` (see ``attempts`` and
    /// ``elapsed``).
    func telling(attempts: Int?, elapsed: Duration) -> CourierError {
        var copy = self
        copy.attempts = attempts
        copy.elapsed = elapsed
        return copy
    }

    /// `duration` as a person reads it in an error: `6.4 s` from one second up, `250.0 ms` below.
    static func shortText(_ duration: Duration) -> String {
        guard duration >= .seconds(1) else { return "\(LogRecord.milliseconds(duration)) ms" }
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10 + attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
