extension RetryPolicy {
    /// How long to wait before a retry.
    ///
    /// ```swift
    /// policy.backoff = .exponential(base: .milliseconds(100), multiplier: 2, maximum: .seconds(5))
    /// policy.backoff = .constant(.milliseconds(250))
    /// policy.backoff = .custom { retry in .milliseconds(100 * retry) }   // linear
    /// ```
    ///
    /// Retries are numbered from 1: retry 1 comes before the second attempt.
    public struct Backoff: Sendable {
        private enum Kind: Sendable {
            case exponential(base: Duration, multiplier: Double, maximum: Duration, jitter: Jitter)
            case constant(Duration, jitter: Jitter)
            case custom(@Sendable (Int) -> Duration)
        }

        private let kind: Kind

        private init(_ kind: Kind) {
            self.kind = kind
        }

        /// Exponential backoff: before retry *n*, up to `min(maximum, base × multiplier^(n−1))`, spread by
        /// `jitter`.
        ///
        /// With the defaults and full jitter, retry 1 waits between 0 and 200 ms, retry 2 between 0 and
        /// 400 ms, retry 3 between 0 and 800 ms, and no retry more than 10 s. Full jitter spreads the retries
        /// of many clients that failed together, so they do not come back in waves.
        ///
        /// - Parameters:
        ///   - base: The ceiling for the first retry; must not be negative.
        ///   - multiplier: How much the ceiling grows per retry; at least 1.
        ///   - maximum: The largest ceiling.
        ///   - jitter: How the delay is drawn below the ceiling; ``Jitter/full`` by default.
        public static func exponential(
            base: Duration = .milliseconds(200),
            multiplier: Double = 2,
            maximum: Duration = .seconds(10),
            jitter: Jitter = .full
        ) -> Backoff {
            precondition(base >= .zero, "the backoff base must not be negative (got \(base))")
            precondition(multiplier >= 1, "the backoff multiplier must be at least 1 (got \(multiplier))")
            precondition(maximum >= .zero, "the maximum backoff must not be negative (got \(maximum))")
            return Backoff(.exponential(base: base, multiplier: multiplier, maximum: maximum, jitter: jitter))
        }

        /// The same delay before every retry, spread by `jitter` (none by default).
        ///
        /// - Parameters:
        ///   - delay: The delay; must not be negative.
        ///   - jitter: How the delay is drawn; ``Jitter/none`` by default.
        public static func constant(_ delay: Duration, jitter: Jitter = .none) -> Backoff {
            precondition(delay >= .zero, "the backoff delay must not be negative (got \(delay))")
            return Backoff(.constant(delay, jitter: jitter))
        }

        /// Retries at once, without waiting.
        public static var immediate: Backoff { .constant(.zero) }

        /// A delay computed by your own function from the retry's number (1 for the first retry). A negative
        /// result counts as zero.
        ///
        /// - Parameter delay: Returns the delay before retry *n*.
        public static func custom(_ delay: @escaping @Sendable (_ retry: Int) -> Duration) -> Backoff {
            Backoff(.custom(delay))
        }

        /// The largest delay this backoff can give before `retry`: the ceiling that jitter draws below.
        ///
        /// - Parameter retry: The retry's number, from 1.
        /// - Returns: The ceiling (for a custom backoff, its delay).
        public func ceiling(forRetry retry: Int) -> Duration {
            switch kind {
            case .exponential(let base, let multiplier, let maximum, _):
                let factor = pow(multiplier, retry - 1)
                let seconds = base.seconds * factor
                guard seconds.isFinite, seconds < maximum.seconds else { return maximum }
                return .seconds(seconds)
            case .constant(let delay, _):
                return delay
            case .custom(let delay):
                return max(.zero, delay(retry))
            }
        }

        /// The delay before `retry`, with `random` (a number in `0..<1`) choosing where jitter puts it.
        ///
        /// - Parameters:
        ///   - retry: The retry's number, from 1.
        ///   - random: A random number in `0..<1`.
        /// - Returns: The delay, between zero and ``ceiling(forRetry:)``.
        public func delay(forRetry retry: Int, random: Double) -> Duration {
            let top = ceiling(forRetry: retry)
            switch kind {
            case .exponential(_, _, _, let jitter), .constant(_, let jitter):
                return jitter.apply(to: top, random: random)
            case .custom:
                return top
            }
        }
    }

    /// How a backoff delay is drawn below its ceiling.
    public enum Jitter: Sendable, Hashable {
        /// Exactly the ceiling.
        case none
        /// Anywhere between zero and the ceiling ("full jitter"): the best spread of many clients' retries.
        case full
        /// Between half the ceiling and the ceiling ("equal jitter"): a guaranteed minimum wait.
        case equal

        func apply(to ceiling: Duration, random: Double) -> Duration {
            // A random source that goes wrong (NaN from 0/0) must not trap: NaN passes `min` and `max`.
            let random = random.isNaN ? 0 : min(max(random, 0), 1)
            switch self {
            case .none:
                return ceiling
            case .full:
                return .seconds(ceiling.seconds * random)
            case .equal:
                return .seconds(ceiling.seconds * (0.5 + 0.5 * random))
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

/// `multiplier` to the power `exponent`, by repeated squaring (Foundation's `pow` is not needed).
private func pow(_ multiplier: Double, _ exponent: Int) -> Double {
    var result = 1.0
    var base = multiplier
    var exponent = max(0, exponent)
    while exponent > 0 {
        if exponent & 1 == 1 { result *= base }
        base *= base
        exponent >>= 1
    }
    return result
}
