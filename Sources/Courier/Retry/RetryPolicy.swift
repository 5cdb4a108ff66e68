public import Foundation

/// When and how ``Middleware/retry(_:clock:)`` sends a request again.
///
/// ```swift
/// var policy = RetryPolicy.default                       // 3 attempts, exponential backoff, full jitter
/// policy.maximumAttempts = 5
/// policy.backoff = .exponential(base: .milliseconds(100), multiplier: 2, maximum: .seconds(5))
/// policy.onRetry = { event in
///     logger.info("retry \(event.attempt) of \(event.maximumAttempts) in \(event.delay): \(event.reason)")
/// }
/// let client = Client(baseURL: base, middleware: [.timeout(.seconds(10)), .retry(policy)])
/// ```
///
/// The defaults (``default``):
/// - **3 attempts in total** (the first and two retries).
/// - **Backoff**: exponential with full jitter — before retry *n* a random delay between zero and
///   `min(10 s, 200 ms × 2^(n−1))`.
/// - **Retryable statuses**: 408, 429, 500, 502, 503 and 504.
/// - **Retryable errors**: transient transport failures only (``isTransient(_:)`` lists them) and a
///   per-attempt ``CourierError/Code/timedOut`` from a timeout placed inside the retry.
/// - **Idempotency**: only `GET`, `HEAD`, `OPTIONS`, `PUT`, `DELETE` and `TRACE` are retried; other
///   methods only with an `Idempotency-Key` header (see ``Middleware/idempotencyKey(header:methods:generate:)``)
///   or with ``retriesNonIdempotentRequests``.
/// - **Retry-After** on 429 and 503 (seconds or an HTTP-date) replaces the backoff; above
///   ``maximumRetryAfter`` (60 s) the response is returned instead of waiting.
/// - **Budget**: a ``RetryBudget`` allows retries for 20 % of requests plus 10 per second.
///
/// `RetryPolicy` is a value; its ``budget`` is a shared reference, so copies of one policy (and every
/// client built from them) draw on the same budget. ``default`` makes a new budget each time it is read.
public struct RetryPolicy: Sendable {
    /// The most attempts for one call, the first one included; at least 1. The default is 3.
    public var maximumAttempts: Int

    /// How long to wait before each retry, unless the server said with `Retry-After`.
    public var backoff: Backoff

    /// The response statuses that are retried: by default 408, 429, 500, 502, 503 and 504.
    ///
    /// A retryable status is retried whether the response reaches the retry layer as a response, or as a
    /// ``CourierError/Code/unacceptableStatus`` error thrown by a status validation layer inside it. When
    /// no attempts are left, the last response is returned (or the error rethrown) as it is.
    public var retryableStatuses: Set<Int>

    /// Decides whether a thrown error is worth retrying; ``isTransient(_:)`` by default.
    ///
    /// It is not asked about `CancellationError` (never retried) or about
    /// ``CourierError/Code/unacceptableStatus`` (decided by ``retryableStatuses``).
    public var isRetryable: @Sendable (any Error) -> Bool

    /// Whether requests whose method is not idempotent (`POST`, `PATCH`, …) are retried even without an
    /// idempotency key. `false` by default: resending a `POST` can charge a card twice.
    public var retriesNonIdempotentRequests: Bool

    /// The header whose presence makes a non-idempotent request safe to retry: `Idempotency-Key`.
    public var idempotencyKeyHeader: String

    /// The longest `Retry-After` the retry waits for; when a 429 or 503 asks for more, the response is
    /// returned instead. 60 seconds by default.
    public var maximumRetryAfter: Duration

    /// The retry budget shared by every copy of this policy, or `nil` for no budget.
    public var budget: RetryBudget?

    /// Called just before each retry's backoff starts, with the attempt about to be made, the delay and the
    /// reason; for logging and metrics. It runs in the caller's task and should return quickly.
    public var onRetry: (@Sendable (RetryEvent) -> Void)?

    /// Returns a random number in `0..<1` for jitter. Inject a seeded source to make delays reproducible.
    public var random: @Sendable () -> Double

    /// Returns the current wall-clock time, used to turn an HTTP-date `Retry-After` into a delay.
    /// Inject a fixed date in tests.
    public var currentDate: @Sendable () -> Date

    /// ```swift
    /// let policy = RetryPolicy(
    ///     maximumAttempts: 4,
    ///     backoff: .exponential(base: .milliseconds(50)),
    ///     retryableStatuses: [503],
    ///     budget: RetryBudget(ratio: 0.1)
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - maximumAttempts: The most attempts in total, the first included; at least 1.
    ///   - backoff: The delay before each retry.
    ///   - retryableStatuses: The statuses that are retried.
    ///   - isRetryable: Whether a thrown error is retried.
    ///   - retriesNonIdempotentRequests: Whether `POST`, `PATCH` and other non-idempotent methods are retried
    ///     without an idempotency key.
    ///   - idempotencyKeyHeader: The header that makes a non-idempotent request retryable.
    ///   - maximumRetryAfter: The longest `Retry-After` that is honoured.
    ///   - budget: The shared retry budget, or `nil` for none.
    ///   - onRetry: Called before each retry.
    ///   - random: A source of random numbers in `0..<1`, for jitter.
    ///   - currentDate: The wall clock, for HTTP-date `Retry-After` values.
    public init(
        maximumAttempts: Int = 3,
        backoff: Backoff = .exponential(),
        retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
        isRetryable: @escaping @Sendable (any Error) -> Bool = RetryPolicy.isTransient,
        retriesNonIdempotentRequests: Bool = false,
        idempotencyKeyHeader: String = "Idempotency-Key",
        maximumRetryAfter: Duration = .seconds(60),
        budget: RetryBudget? = RetryBudget(),
        onRetry: (@Sendable (RetryEvent) -> Void)? = nil,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        currentDate: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.maximumAttempts = maximumAttempts
        self.backoff = backoff
        self.retryableStatuses = retryableStatuses
        self.isRetryable = isRetryable
        self.retriesNonIdempotentRequests = retriesNonIdempotentRequests
        self.idempotencyKeyHeader = idempotencyKeyHeader
        self.maximumRetryAfter = maximumRetryAfter
        self.budget = budget
        self.onRetry = onRetry
        self.random = random
        self.currentDate = currentDate
    }

    /// The recommended policy (see the type's overview), with a new ``RetryBudget`` each time it is read.
    public static var `default`: RetryPolicy { RetryPolicy() }
}

extension RetryPolicy {
    /// Whether a request may be sent again after the server may have acted on it: its method is idempotent
    /// (``HTTPMethod/isIdempotent``, RFC 9110 §9.2.2), it carries ``idempotencyKeyHeader``, or the policy
    /// ``retriesNonIdempotentRequests``. The one rule for every layer that sends a request again: the retry,
    /// and an event stream's reconnection.
    ///
    /// - Parameters:
    ///   - method: The request's method; `nil` is `GET`.
    ///   - header: The value of the request's header of a name, or `nil`.
    func allowsSendingAgain(method: String?, header: (String) -> String?) -> Bool {
        if retriesNonIdempotentRequests { return true }
        if HTTPMethod(rawValue: method ?? "GET").isIdempotent { return true }
        return Self.isIdempotencyKey(header(idempotencyKeyHeader))
    }

    /// Whether a header's value is an idempotency key: present and not blank, nor a quoted string of nothing (`""`,
    /// the IETF draft's form of an empty key). An empty or blank value (what
    /// `setValue(order.key ?? "", …)` writes) lets the server tell no copy from another, so it counts as none,
    /// for every layer that decides on a key: the retry, an event stream's reconnection, hedging, the key layer
    /// and a transport's own resend.
    static func isIdempotencyKey(_ value: String?) -> Bool {
        guard var bytes = value.map({ Substring($0).utf8 }) else { return false }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isBlank(first) { bytes.removeFirst() }
        while let last = bytes.last, isBlank(last) { bytes.removeLast() }
        // The IETF draft's form is a quoted string: `""` (or quotes around blanks) is as empty.
        if bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") {
            bytes.removeFirst()
            bytes.removeLast()
        }
        return bytes.contains { !isBlank($0) }
    }
}
