public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// How ``Middleware/rateLimiting(_:clock:)`` paces requests: how long and how many may wait, how requests
/// are grouped, and the limit to keep when a server says nothing.
///
/// ```swift
/// var policy = RateLimitPolicy()
/// policy.maximumWait = .seconds(30)
/// policy.clientLimit = .init(maxRequests: 100, per: .seconds(60))   // until the server says otherwise
/// policy.partition = { request in request.value(forHTTPHeaderField: "X-Tenant") ?? "" }
/// policy.onEvent = { event in logger.debug("\(event)") }
/// let client = Client(baseURL: base, middleware: [.retry(.default), .rateLimiting(policy)])
/// ```
public struct RateLimitPolicy: Sendable {
    /// A limit the client keeps on its own: `maxRequests` per `window`, the window starting with its first
    /// request.
    ///
    /// A request is sent only in the window whose slot it holds: one whose ``RateLimitPolicy/SharedLimit``
    /// reservation outlives the window it took its slot in gives that slot to no one and takes a slot of the current
    /// window, waiting for one (within ``RateLimitPolicy/maximumWait``, the call's deadline and its cancellation)
    /// like any other request.
    public struct ClientLimit: Sendable, Hashable {
        /// The most requests per window; at least 1.
        public var maxRequests: Int
        /// The length of a window.
        public var window: Duration

        /// Creates a limit of `maxRequests` per `window`.
        public init(maxRequests: Int, per window: Duration) {
            precondition(maxRequests > 0, "a client-side limit must allow at least one request")
            precondition(window > .zero, "a client-side window must be longer than zero")
            self.maxRequests = maxRequests
            self.window = window
        }
    }

    /// The limit to keep while the server has sent no rate-limit fields for a partition, or `nil` (the
    /// default): then the first request to a partition goes alone as a probe, the others wait for its
    /// response, and a partition whose server sends no fields is not paced at all. Once the server sends
    /// numbers, they replace this limit. A `429` or `503` without numbers is not one: it holds the partition
    /// for its `Retry-After` (or ``fallbackDelay``), and the client-side limit and its window go on after it.
    public var clientLimit: ClientLimit?

    /// A quota the replicas sharing the limiter's ``RateLimitStore`` split between them, taking slots from the
    /// store in blocks (see ``SharedLimit``), or `nil` (the default): then each replica paces alone.
    public var sharedLimit: SharedLimit?

    /// The longest a request waits for its slot; one that would wait longer fails at once with
    /// ``CourierError/Code/rateLimited`` (or as soon as the wait is known, or when it has waited this long).
    /// 60 seconds by default; `nil` for no limit (the call's deadline still applies).
    public var maximumWait: Duration?

    /// The most requests that may wait in one partition; one more fails at once with
    /// ``CourierError/Code/rateLimited``. 10,000 by default; `nil` for no limit.
    public var maximumQueueLength: Int?

    /// How long to hold requests when the server refuses one (`429`/`503`) or reports nothing left without
    /// saying until when. One second by default.
    public var fallbackDelay: Duration

    /// The partition a request belongs to: requests in one partition share one quota. By default
    /// ``host(of:)``, the host and port. Return, for example, a tenant or an account identifier to follow a
    /// quota per account (when the key is derived from a credential, return a hash of it, not the secret:
    /// keys appear in events and stores). Partitions do not accumulate: past 1,024 of them, the limiter forgets
    /// those that hold nothing (nobody waiting, nothing in flight, no window or hold still to come), and a request
    /// to a forgotten partition starts it again as a new one.
    public var partition: @Sendable (URLRequest) -> String {
        didSet { partitionsByHost = false }
    }

    /// Whether ``partition`` is the default, ``host(of:)``, so that the limiter may reuse the key of the last
    /// URL for a URL with the same scheme, host and port instead of calling it.
    private(set) var partitionsByHost: Bool

    /// Called when a request waited or was refused, and when a response changed a quota; for logs and
    /// metrics. It runs synchronously on the request's path and must be quick.
    public var onEvent: (@Sendable (RateLimitEvent) -> Void)?

    /// The longest a call to the ``RateLimitStore`` may take before the limiter goes on without it; one second
    /// by default. A store shared by replicas (a database) can be slow or down: reading a partition's quota
    /// then counts as nothing stored, and a reservation of a ``sharedLimit`` as a failure.
    public var storeTimeout: Duration = .seconds(1)

    /// The wall clock, for epoch-time resets and HTTP-date `Retry-After` values. Inject a fixed date in tests.
    public var currentDate: @Sendable () -> Date

    /// Creates a policy; see each property for what it means. A `partition` of `nil` (the default) is ``host(of:)``.
    public init(
        clientLimit: ClientLimit? = nil,
        sharedLimit: SharedLimit? = nil,
        maximumWait: Duration? = .seconds(60),
        maximumQueueLength: Int? = 10_000,
        fallbackDelay: Duration = .seconds(1),
        partition: (@Sendable (URLRequest) -> String)? = nil,
        onEvent: (@Sendable (RateLimitEvent) -> Void)? = nil,
        currentDate: @escaping @Sendable () -> Date = { Date() }
    ) {
        precondition((maximumQueueLength ?? 0) >= 0, "maximumQueueLength must not be negative")
        precondition(fallbackDelay > .zero, "fallbackDelay must be longer than zero")
        self.clientLimit = clientLimit
        self.sharedLimit = sharedLimit
        self.maximumWait = maximumWait
        self.maximumQueueLength = maximumQueueLength
        self.fallbackDelay = fallbackDelay
        self.partition = partition ?? RateLimitPolicy.host(of:)
        partitionsByHost = partition == nil
        self.onEvent = onEvent
        self.currentDate = currentDate
    }

    /// The default partition: the request's host, lowercased, and port, for example `api.example.com:443`.
    @Sendable
    public static func host(of request: URLRequest) -> String {
        HostKey.of(request.url)
    }
}
