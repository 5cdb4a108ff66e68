import Synchronization

/// A token bucket that keeps retries within a fraction of recent requests, so that retries cannot
/// multiply an outage.
///
/// Without a budget, an always-failing server receives every request three times (with three attempts);
/// with the default budget, about 1.2 times.
///
/// The rule, precisely:
/// - the bucket starts with ``minimumPerSecond`` tokens (one second of the floor);
/// - every call that enters a retry layer using the budget adds ``ratio`` tokens (0.2);
/// - time adds ``minimumPerSecond`` tokens per second (10), measured on the budget's clock, so that a
///   client with little traffic can still retry;
/// - the bucket never holds more than ``maximumBalance`` tokens (100), so a long healthy period does not
///   bank an unbounded burst of retries;
/// - a retry takes one token; when less than one token is left, the retry is refused and the call ends
///   with its last response or error.
///
/// So over any stretch of time *t* in which *n* calls start, at most
/// `balance at the start + ratio × n + minimumPerSecond × t` retries happen, and the balance at the start
/// is at most ``maximumBalance``: for 1,000 calls against a server that always fails, at most about
/// 1,000 × 1.2 + 10 attempts instead of 3,000.
///
/// A budget is shared by reference: every copy of a ``RetryPolicy`` holding it, and every client built
/// with those copies, draws on the same bucket. Give unrelated services their own budget.
///
/// ```swift
/// let budget = RetryBudget(ratio: 0.1, minimumPerSecond: 5)
/// let payments = Client(baseURL: paymentsURL, middleware: [.retry(RetryPolicy(budget: budget))])
/// ```
public final class RetryBudget: Sendable {
    /// Token amounts are kept in millionths of a token, so the bucket can be updated with atomic integer
    /// operations (no lock: cheaper, and visible to the thread sanitizer, which does not see the contended
    /// path of `Mutex` on Linux).
    private static let unit = 1_000_000.0

    /// The tokens each call adds: the fraction of calls that may be retried.
    public let ratio: Double
    /// The tokens added per second whatever the traffic: the retries always allowed.
    public let minimumPerSecond: Double
    /// The most tokens the bucket holds.
    public let maximumBalance: Double

    private let elapsed: @Sendable () -> Duration
    private let ratioUnits: Int64
    private let maximumUnits: Int64
    /// The balance, in millionths of a token.
    private let units: Atomic<Int64>
    /// The time (since the budget was made, in nanoseconds) up to which the floor has been added.
    private let refilledUpTo = Atomic<Int64>(0)
    private let requests = Atomic<Int>(0)
    private let retries = Atomic<Int>(0)
    private let refusals = Atomic<Int>(0)

    /// Creates a budget.
    ///
    /// - Parameters:
    ///   - ratio: The tokens each call adds, from 0 (retries only from the floor) up; 0.2 by default.
    ///   - minimumPerSecond: The tokens added per second; 10 by default. Also the starting balance.
    ///   - maximumBalance: The most tokens kept; 100 by default.
    ///   - clock: The clock the per-second refill is measured on; `ContinuousClock` by default, a
    ///     `ManualClock` in tests.
    public init<C: Clock<Duration>>(
        ratio: Double = 0.2,
        minimumPerSecond: Double = 10,
        maximumBalance: Double = 100,
        clock: C = ContinuousClock()
    ) {
        precondition(
            ratio >= 0 && ratio <= 1_000_000,
            "the retry budget's ratio must be a number from 0 to 1,000,000 (got \(ratio))"
        )
        precondition(
            minimumPerSecond >= 0 && minimumPerSecond <= 1_000_000,
            "the retry budget's minimum per second must be a number from 0 to 1,000,000 (got \(minimumPerSecond))"
        )
        precondition(
            maximumBalance >= 0 && maximumBalance <= 1_000_000_000,
            "the retry budget's maximum balance must be a number from 0 to 1,000,000,000 (got \(maximumBalance))"
        )
        self.ratio = ratio
        self.minimumPerSecond = minimumPerSecond
        self.maximumBalance = maximumBalance
        self.ratioUnits = Int64((ratio * Self.unit).rounded())
        self.maximumUnits = Int64((maximumBalance * Self.unit).rounded())
        self.units = Atomic(Int64((min(minimumPerSecond, maximumBalance) * Self.unit).rounded()))
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
    }

    /// The tokens in the bucket now: how many retries it would allow at once.
    public var balance: Double {
        refill()
        return Double(units.load(ordering: .relaxed)) / Self.unit
    }

    /// How many calls, retries and refused retries the budget has seen.
    public var statistics: (requests: Int, retries: Int, refusals: Int) {
        (requests.load(ordering: .relaxed), retries.load(ordering: .relaxed), refusals.load(ordering: .relaxed))
    }

    /// Records the start of a call: adds ``ratio`` tokens.
    func recordRequest() {
        requests.add(1, ordering: .relaxed)
        deposit(ratioUnits)
    }

    /// Takes a token for a retry, if there is one.
    ///
    /// - Returns: `true` when the retry may go ahead.
    func withdrawForRetry() -> Bool {
        refill()
        var current = units.load(ordering: .relaxed)
        while true {
            guard current >= Int64(Self.unit) else {
                refusals.add(1, ordering: .relaxed)
                return false
            }
            let (exchanged, original) = units.compareExchange(
                expected: current,
                desired: current - Int64(Self.unit),
                ordering: .acquiringAndReleasing
            )
            if exchanged {
                retries.add(1, ordering: .relaxed)
                return true
            }
            current = original
        }
    }

    /// Adds `amount` units, never going above the maximum.
    private func deposit(_ amount: Int64) {
        guard amount > 0 else { return }
        var current = units.load(ordering: .relaxed)
        while true {
            let desired = min(maximumUnits, current + amount)
            guard desired != current else { return }
            let (exchanged, original) = units.compareExchange(
                expected: current,
                desired: desired,
                ordering: .acquiringAndReleasing
            )
            if exchanged { return }
            current = original
        }
    }

    /// Adds the floor's tokens for the time since the last refill. Whoever moves `refilledUpTo` forward adds
    /// the tokens for that stretch, so each stretch of time is counted once. Deposits need no refill first:
    /// capping before or after adding the refill gives the same balance.
    private func refill() {
        guard minimumPerSecond > 0 else { return }
        let (seconds, attoseconds) = elapsed().components
        let now = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        var last = refilledUpTo.load(ordering: .relaxed)
        while now > last {
            let (exchanged, original) = refilledUpTo.compareExchange(
                expected: last,
                desired: now,
                ordering: .acquiringAndReleasing
            )
            if exchanged {
                let tokens = minimumPerSecond * Double(now - last) / 1_000_000_000
                deposit(Int64(min(tokens, Double(maximumUnits) / Self.unit) * Self.unit))
                return
            }
            last = original
        }
    }
}
