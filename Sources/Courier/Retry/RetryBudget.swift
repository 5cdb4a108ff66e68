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
    /// The tokens each call adds: the fraction of calls that may be retried.
    public let ratio: Double
    /// The tokens added per second whatever the traffic: the retries always allowed.
    public let minimumPerSecond: Double
    /// The most tokens the bucket holds.
    public let maximumBalance: Double

    private let elapsed: @Sendable () -> Duration
    /// The bucket; its transitions are ``RetryBudgetStateMachine``'s. One lock section per call and per retry.
    private let state: LockedState<RetryBudgetStateMachine>

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
        self.state = LockedState(
            RetryBudgetStateMachine(ratio: ratio, minimumPerSecond: minimumPerSecond, maximumBalance: maximumBalance)
        )
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
    }

    /// The tokens in the bucket now: how many retries it would allow at once.
    public var balance: Double {
        let now = elapsed()
        return state.withLock { state in
            state.refill(now: now)
            return state.balance
        }
    }

    /// How many calls, retries and refused retries the budget has seen.
    public var statistics: (requests: Int, retries: Int, refusals: Int) {
        state.withLock { ($0.requests, $0.retries, $0.refusals) }
    }

    /// Records the start of a call: adds ``ratio`` tokens.
    func recordRequest() {
        state.withLock { $0.recordRequest() }
    }

    /// Takes a token for a retry, if there is one.
    ///
    /// - Returns: `true` when the retry may go ahead.
    func withdrawForRetry() -> Bool {
        let now = elapsed()
        return state.withLock { $0.withdrawForRetry(now: now) }
    }

    /// Gives back the token of a retry that was not sent.
    func returnRetry() {
        state.withLock { $0.returnRetry() }
    }
}
