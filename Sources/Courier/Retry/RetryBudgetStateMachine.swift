/// The token bucket of a ``RetryBudget``, as a value: calls and time put tokens in, retries take them out.
///
/// Time is a `Duration` since the budget was made, so the machine does not depend on a clock type and tests
/// drive it with plain values. The budget keeps the machine under a lock and reads its clock outside it.
///
/// Amounts are kept in millionths of a token, as integers, so that sums are exact: five calls at a ratio of
/// 0.2 make exactly one token.
struct RetryBudgetStateMachine: Sendable, Equatable {
    /// Millionths of a token in a token.
    static let unit: Int64 = 1_000_000

    /// The tokens each call adds, in millionths.
    let ratioUnits: Int64
    /// The tokens added per second, in tokens.
    let minimumPerSecond: Double
    /// The most tokens the bucket holds, in millionths.
    let maximumUnits: Int64
    /// The balance, in millionths of a token.
    private(set) var units: Int64
    /// The time up to which the floor has been added, in nanoseconds.
    private(set) var refilledUpTo: Int64 = 0
    private(set) var requests = 0
    private(set) var retries = 0
    private(set) var refusals = 0

    /// Creates a bucket at time zero holding one second of the floor (at most the maximum).
    init(ratio: Double, minimumPerSecond: Double, maximumBalance: Double) {
        self.ratioUnits = Self.units(ratio)
        self.minimumPerSecond = minimumPerSecond
        self.maximumUnits = Self.units(maximumBalance)
        self.units = Self.units(min(minimumPerSecond, maximumBalance))
    }

    /// The tokens in the bucket.
    var balance: Double { Double(units) / Double(Self.unit) }

    // MARK: Events

    /// A call entered a retry layer: adds the ratio.
    mutating func recordRequest() {
        requests += 1
        deposit(ratioUnits)
    }

    /// A call wants to retry at `now`: takes a token if there is one after the refill.
    ///
    /// - Returns: Whether the retry may go ahead.
    mutating func withdrawForRetry(now: Duration) -> Bool {
        refill(now: now)
        guard units >= Self.unit else {
            refusals += 1
            return false
        }
        units -= Self.unit
        retries += 1
        return true
    }

    /// A retry that took a token was not sent after all (its call was cancelled while it waited, or its body
    /// cannot be sent again): the token goes back, and the retry is not counted.
    mutating func returnRetry() {
        retries = max(0, retries - 1)
        deposit(Self.unit)
    }

    /// Adds the floor's tokens for the time since the last refill. A `now` earlier than the last refill (read
    /// from the clock before another thread's later reading took the lock) adds nothing.
    mutating func refill(now: Duration) {
        guard minimumPerSecond > 0 else { return }
        let (seconds, attoseconds) = now.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        guard nanoseconds > refilledUpTo else { return }
        let tokens = minimumPerSecond * Double(nanoseconds - refilledUpTo) / 1_000_000_000
        refilledUpTo = nanoseconds
        deposit(Int64(min(tokens, Double(maximumUnits) / Double(Self.unit)) * Double(Self.unit)))
    }

    // MARK: Helpers

    /// Adds `amount`, never going above the maximum. (Capping before or after a refill gives the same balance,
    /// so a deposit needs no refill first.)
    private mutating func deposit(_ amount: Int64) {
        guard amount > 0 else { return }
        units = min(maximumUnits, units + amount)
    }

    private static func units(_ tokens: Double) -> Int64 {
        Int64((tokens * Double(unit)).rounded())
    }
}
