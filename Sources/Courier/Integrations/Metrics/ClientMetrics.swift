#if Metrics
public import Metrics

#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// The metrics a ``Client`` reports through swift-metrics: requests, durations, failures, requests in
/// flight, retries and credential refreshes (trait `Metrics`).
///
/// Make one per client (or share one between clients that should report together), put its middleware
/// in the stack, and hook it into the retry policy and the token refresher:
///
/// ```swift
/// import Courier
/// import Metrics
///
/// let metrics = ClientMetrics()                      // the factory bootstrapped in `MetricsSystem`
/// let client = Client(
///     baseURL: URL(string: "https://api.example.com")!,
///     middleware: [.metrics(metrics), .retry(.default), .validatingStatus()]
/// )
/// ```
///
/// What is recorded, with dimensions named after the OpenTelemetry semantic conventions for HTTP
/// clients (`server.address` is left out when ``Options/includesServerAddress`` is off):
///
/// | Metric | Kind | Dimensions | Recorded |
/// | --- | --- | --- | --- |
/// | `http.client.requests` | counter | `http.request.method`, `http.response.status_class`, `server.address` | once per request |
/// | `http.client.request.duration` | timer (seconds) | the same | once per request |
/// | `http.client.request.errors` | counter | `http.request.method`, `error.type`, `server.address` | per failed request |
/// | `http.client.active_requests` | meter | `http.request.method`, `server.address` | up at start, down at the end |
/// | `http.client.request.retries` | counter | `http.request.method`, `server.address` | per ``recordRetry(for:)`` |
/// | `http.client.token.refreshes` | counter | `outcome` (`success`, `failure`) | per refresh, see ``countingRefreshes(_:)`` |
/// | `courier.requests.in_flight` | gauge | none, or yours | a ``RequestCounter``'s in flight, see ``reportInFlight(of:dimensions:)`` |
///
/// `http.response.status_class` is `1xx` … `5xx` for a response (also for an unacceptable-status error,
/// which carries one), `error` for a failure without a response, and `cancelled` when the caller's task
/// was cancelled. `error.type` is the ``CourierError/Code`` (`timedOut`, `transport`, …) or, for another
/// error, its type's name. Cancellation is not a failure and is not counted in `http.client.request.errors`.
///
/// **Cardinality.** No dimension carries a URL, a path, a query, an ID or an error message. Methods that
/// HTTP does not define are reported as `_OTHER`; after ``Options/maximumServerAddresses`` distinct hosts,
/// further hosts are reported as `_OTHER` too. To rename the metrics or add dimensions (a service name, an
/// environment), pass a factory made with swift-metrics' `withLabelAndDimensionsMapping`.
///
/// **Cost.** The metric objects are made once per distinct set of dimensions and kept; a request takes two
/// short lock sections to find them (one when it starts, one when it ends), plus whatever the metrics
/// backend does.
public final class ClientMetrics: Sendable {
    /// The labels of the metrics, for dashboards and tests.
    public enum Label {
        /// `http.client.requests`: a counter of requests, by method and status class.
        public static let requests = "http.client.requests"
        /// `http.client.request.duration`: a timer of how long requests took.
        public static let duration = "http.client.request.duration"
        /// `http.client.request.errors`: a counter of failed requests, by error type.
        public static let errors = "http.client.request.errors"
        /// `http.client.active_requests`: a meter of the requests in flight.
        public static let activeRequests = "http.client.active_requests"
        /// `http.client.request.retries`: a counter of retries.
        public static let retries = "http.client.request.retries"
        /// `http.client.token.refreshes`: a counter of credential refreshes, by outcome.
        public static let refreshes = "http.client.token.refreshes"
        /// `courier.requests.in_flight`: a gauge of a ``RequestCounter``'s requests in flight, see
        /// ``ClientMetrics/reportInFlight(of:dimensions:)``.
        public static let inFlight = "courier.requests.in_flight"
    }

    /// The names of the dimensions, for dashboards and tests.
    public enum Dimension {
        /// `http.request.method`: `GET`, `POST`, …, or `_OTHER`.
        public static let method = HTTPAttributes.method
        /// `http.response.status_class`: `1xx` … `5xx`, `error` or `cancelled`.
        public static let statusClass = "http.response.status_class"
        /// `server.address`: the host the request went to, or `_OTHER`.
        public static let serverAddress = HTTPAttributes.serverAddress
        /// `error.type`: a ``CourierError/Code`` or an error type's name.
        public static let errorType = HTTPAttributes.errorType
        /// `outcome`: `success` or `failure`, for refreshes.
        public static let outcome = "outcome"
    }

    /// What the metrics record.
    public let options: Options

    let factory: (any MetricsFactory)?
    // Every cached metric object and the set of hosts seen so far; the lock is held only to look up or
    // insert, never while a metric is recorded. No state machine: a cache, with no waiters and nothing to do
    // after a change.
    private let cache = LockedState(Cache())

    /// Creates the metrics of a client.
    ///
    /// - Parameters:
    ///   - factory: The swift-metrics backend; `nil` (the default) uses `MetricsSystem.factory` at the time
    ///     each metric is first recorded, so bootstrap the metrics system before the first request.
    ///   - options: What to record.
    public init(factory: (any MetricsFactory)? = nil, options: Options = Options()) {
        self.factory = factory
        self.options = options
    }

    // MARK: Hooks

    /// Counts one retry of `request` in `http.client.request.retries`.
    ///
    /// Call it from the retry policy's before-retry hook, so that every retry is counted once:
    ///
    /// ```swift
    /// var policy = RetryPolicy.default
    /// policy.onRetry = { event in metrics.recordRetry(for: event.request) }
    /// ```
    ///
    /// - Parameter request: The request being retried (only its method and host are used).
    public func recordRetry(for request: URLRequest) {
        let key = seriesKey(for: request)
        metric(
            in: { $0.retries.value(for: key, storing: $1) },
            make: { factory in
                Counter(label: Label.retries, dimensions: self.dimensions(key), factory: factory)
            }
        ).increment()
    }

    /// Wraps a credential refresh operation so that each call is counted in `http.client.token.refreshes`
    /// with the outcome `success` or `failure`.
    ///
    /// ```swift
    /// let auth = TokenRefresher(token: storedToken, refresh: metrics.countingRefreshes { rejected in
    ///     try await fetchNewToken()
    /// })
    /// ```
    ///
    /// A refresh that ends in `CancellationError` is not counted.
    ///
    /// - Returns: An operation that does the same and counts it.
    public func countingRefreshes<Input, Output>(
        _ refresh: @escaping @Sendable (Input) async throws -> Output
    ) -> @Sendable (Input) async throws -> Output {
        { input in
            do {
                let output = try await refresh(input)
                self.recordRefresh(succeeded: true)
                return output
            } catch {
                if !(error is CancellationError) { self.recordRefresh(succeeded: false) }
                throw error
            }
        }
    }

    /// Counts one credential refresh in `http.client.token.refreshes`.
    ///
    /// ``countingRefreshes(_:)`` calls it for you; call it yourself when refreshes happen elsewhere.
    ///
    /// - Parameter succeeded: Whether the refresh produced a new credential.
    public func recordRefresh(succeeded: Bool) {
        let outcome = succeeded ? "success" : "failure"
        metric(
            in: { $0.refreshes.value(for: outcome, storing: $1) },
            make: { factory in
                Counter(label: Label.refreshes, dimensions: [(Dimension.outcome, outcome)], factory: factory)
            }
        ).increment()
    }

    // MARK: Used by the middleware

    /// The method and host a request is reported under.
    struct SeriesKey: Hashable, Sendable {
        let method: String
        let serverAddress: String?
    }

    private struct OutcomeKey: Hashable, Sendable {
        let series: SeriesKey
        let statusClass: String
    }

    private struct ErrorKey: Hashable, Sendable {
        let series: SeriesKey
        let errorType: String
    }

    private struct Outcome: Sendable {
        let requests: Counter
        let duration: Timer
    }

    private struct Cache {
        var serverAddresses: Set<String> = []
        var active: [SeriesKey: Meter] = [:]
        var outcomes: [OutcomeKey: Outcome] = [:]
        var errors: [ErrorKey: Counter] = [:]
        var retries: [SeriesKey: Counter] = [:]
        var refreshes: [String: Counter] = [:]
    }

    /// Starts recording `request`: returns the dimensions it is reported under and its meter of requests in
    /// flight, in one lock section once the meter exists.
    func begin(_ request: URLRequest) -> (key: SeriesKey, activeRequests: Meter) {
        let (method, host) = methodAndHost(of: request)
        let (key, existing) = cache.withLock { cache -> (SeriesKey, Meter?) in
            let key = Self.admit(method: method, host: host, limit: options.maximumServerAddresses, in: &cache)
            return (key, cache.active[key])
        }
        if let existing { return (key, existing) }
        let made = metric(
            in: { $0.active.value(for: key, storing: $1) },
            make: { factory in
                Meter(label: Label.activeRequests, dimensions: self.dimensions(key), factory: factory)
            }
        )
        return (key, made)
    }

    /// The dimensions `request` is reported under.
    func seriesKey(for request: URLRequest) -> SeriesKey {
        let (method, host) = methodAndHost(of: request)
        return cache.withLock { cache in
            Self.admit(method: method, host: host, limit: options.maximumServerAddresses, in: &cache)
        }
    }

    /// The normalized method, and the lower-cased host (`_OTHER` when the URL has none; `nil` when hosts
    /// are not reported).
    private func methodAndHost(of request: URLRequest) -> (method: String, host: String?) {
        let method = HTTPAttributes.normalizedMethod(HTTPAttributes.method(of: request))
        guard options.includesServerAddress else { return (method, nil) }
        guard let host = request.url?.host(percentEncoded: true), !host.isEmpty else {
            return (method, HTTPAttributes.other)
        }
        return (method, host.lowercased())
    }

    /// The series key for `method` and `host`; a host not seen before gets a series of its own while fewer
    /// than `limit` hosts have one, and is reported as `_OTHER` after that.
    private static func admit(method: String, host: String?, limit: Int, in cache: inout Cache) -> SeriesKey {
        guard let host, host != HTTPAttributes.other, !cache.serverAddresses.contains(host) else {
            return SeriesKey(method: method, serverAddress: host)
        }
        guard cache.serverAddresses.count < limit else {
            return SeriesKey(method: method, serverAddress: HTTPAttributes.other)
        }
        cache.serverAddresses.insert(host)
        return SeriesKey(method: method, serverAddress: host)
    }

    /// Records a request that ended with a response.
    func recordResponse(_ key: SeriesKey, statusCode: Int, duration: Duration) {
        recordOutcome(key, statusClass: HTTPAttributes.statusClass(statusCode), duration: duration)
    }

    /// Records a request that ended with an error (cancellation included).
    func recordFailure(_ key: SeriesKey, error: any Error, duration: Duration) {
        if HTTPAttributes.isCancellation(error) {
            recordOutcome(key, statusClass: "cancelled", duration: duration)
            return
        }
        let statusClass = (error as? CourierError)?.statusCode.map(HTTPAttributes.statusClass) ?? "error"
        recordOutcome(key, statusClass: statusClass, duration: duration)
        let errorKey = ErrorKey(series: key, errorType: HTTPAttributes.errorType(of: error))
        metric(
            in: { $0.errors.value(for: errorKey, storing: $1) },
            make: { factory in
                Counter(
                    label: Label.errors,
                    dimensions: self.dimensions(key, (Dimension.errorType, errorKey.errorType)),
                    factory: factory
                )
            }
        ).increment()
    }

    private func recordOutcome(_ key: SeriesKey, statusClass: String, duration: Duration) {
        let outcomeKey = OutcomeKey(series: key, statusClass: statusClass)
        let outcome = metric(
            in: { $0.outcomes.value(for: outcomeKey, storing: $1) },
            make: { factory in
                let dimensions = self.dimensions(key, (Dimension.statusClass, statusClass))
                return Outcome(
                    requests: Counter(label: Label.requests, dimensions: dimensions, factory: factory),
                    duration: Timer(
                        label: Label.duration,
                        dimensions: dimensions,
                        preferredDisplayUnit: .seconds,
                        factory: factory
                    )
                )
            }
        )
        outcome.requests.increment()
        outcome.duration.record(duration: duration)
    }

    /// The dimensions of `key`, with `extra` after the method (so every series of a metric has the same
    /// dimension names in the same order).
    private func dimensions(_ key: SeriesKey, _ extra: (String, String)? = nil) -> [(String, String)] {
        var dimensions = [(Dimension.method, key.method)]
        if let extra { dimensions.append(extra) }
        if let serverAddress = key.serverAddress { dimensions.append((Dimension.serverAddress, serverAddress)) }
        return dimensions
    }

    /// Returns a cached metric, making it on first use.
    ///
    /// `access` looks the metric up in the cache and, when it is given one that was just made, stores it
    /// unless another is there already. The metric is made outside the lock (a backend may take locks of its
    /// own); if two requests race to make the same one, the first stored wins and both use it.
    private func metric<Value: Sendable>(
        in access: (inout Cache, _ made: Value?) -> Value?,
        make: (any MetricsFactory) -> Value
    ) -> Value {
        if let existing = cache.withLock({ access(&$0, nil) }) { return existing }
        let made = make(factory ?? MetricsSystem.factory)
        return cache.withLock { access(&$0, made) } ?? made
    }
}

extension Dictionary {
    /// The value for `key`; when there is none and `made` is given, stores and returns `made`.
    fileprivate mutating func value(for key: Key, storing made: Value?) -> Value? {
        if let existing = self[key] { return existing }
        guard let made else { return nil }
        self[key] = made
        return made
    }
}
#endif
