public import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One kind of trouble a ``FaultInjectingTransport`` causes: latency, errors, error statuses, dropped
/// connections, waves of 401s.
///
/// ```swift
/// let faults: [Fault] = [
///     .latency(.logNormal(median: .milliseconds(40), p99: .milliseconds(800))),
///     .droppedConnection(rate: 0.02),                                  // URLError(.networkConnectionLost)
///     .droppedConnection(rate: 0.01, afterSending: true),              // the server did the work
///     .serviceUnavailable(rate: 0.05, retryAfter: .seconds(2)),        // 503 + Retry-After: 2
///     .unauthorizedWaves(everyRequests: 100),                          // tokens revoked every 100 requests
///     .serviceUnavailable().forRequests(0..<3),                        // the first three requests: 503
///     .error(URLError(.timedOut), rate: 0.1).only(.get, "/reports/**"),
/// ]
/// ```
///
/// Each fault applies to a request with probability `rate` (1 means always), drawn from the transport's
/// seeded generator, optionally limited to some requests (``forRequests(_:)``) or routes
/// (``only(_:_:)``). Latencies add up; of the faults that answer instead of the server, the first one
/// listed that applies wins.
public struct Fault: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case latency(LatencyDistribution)
        case failure(any Error)
        case response(status: Int, headers: [String: String])
        case droppedAfterSending
        case unauthorizedWaves(WaveSchedule)
    }

    enum WaveSchedule: Sendable {
        case requests(Int)
        case time(Duration)
    }

    let kind: Kind
    let rate: Double
    private(set) var requestRange: Range<Int>?
    private(set) var route: MockRoute?
    private let name: String

    private init(_ kind: Kind, rate: Double, name: String) {
        precondition((0...1).contains(rate), "a fault's rate must be between 0 and 1")
        self.kind = kind
        self.rate = rate
        self.name = name
    }

    /// How the fault reads in messages, for example `serviceUnavailable(rate: 0.05)`.
    public var description: String {
        var text = name
        if let requestRange { text += ".forRequests(\(requestRange))" }
        if let route { text += ".only(\(route))" }
        return text
    }

    // MARK: Faults

    /// Delays requests by a time drawn from `distribution`, on the transport's clock.
    ///
    /// - Parameters:
    ///   - distribution: How long to wait.
    ///   - rate: The share of requests delayed, from 0 to 1.
    public static func latency(_ distribution: LatencyDistribution, rate: Double = 1) -> Fault {
        Fault(.latency(distribution), rate: rate, name: "latency(\(distribution), rate: \(rate))")
    }

    /// Fails requests with `error` without sending them.
    ///
    /// - Parameters:
    ///   - error: The error to throw.
    ///   - rate: The share of requests that fail, from 0 to 1.
    public static func error(_ error: any Error, rate: Double = 1) -> Fault {
        Fault(.failure(error), rate: rate, name: "error(\(error), rate: \(rate))")
    }

    /// Drops the connection: the request fails with `URLError(.networkConnectionLost)`.
    ///
    /// - Parameters:
    ///   - rate: The share of requests dropped, from 0 to 1.
    ///   - afterSending: `false` (the default) drops the request before it reaches the server; `true`
    ///     lets the wrapped transport handle it and drops the response, as when a connection dies while
    ///     the server answers — the case that makes blind retries of non-idempotent requests unsafe.
    public static func droppedConnection(rate: Double = 1, afterSending: Bool = false) -> Fault {
        if afterSending {
            return Fault(.droppedAfterSending, rate: rate, name: "droppedConnection(rate: \(rate), afterSending)")
        }
        return Fault(
            .failure(URLError(.networkConnectionLost)),
            rate: rate,
            name: "droppedConnection(rate: \(rate))"
        )
    }

    /// Answers requests with `status` and an empty body instead of sending them.
    ///
    /// - Parameters:
    ///   - status: The status of the answer.
    ///   - rate: The share of requests answered so, from 0 to 1.
    ///   - headers: The answer's header fields.
    public static func status(_ status: Int, rate: Double = 1, headers: [String: String] = [:]) -> Fault {
        Fault(
            .response(status: status, headers: headers),
            rate: rate,
            name: "status(\(status), rate: \(rate))"
        )
    }

    /// Answers requests with `503 Service Unavailable`, with `Retry-After` when `retryAfter` is given.
    ///
    /// - Parameters:
    ///   - rate: The share of requests answered so, from 0 to 1.
    ///   - retryAfter: The delay to announce, in whole seconds (rounded up).
    public static func serviceUnavailable(rate: Double = 1, retryAfter: Duration? = nil) -> Fault {
        Fault(
            .response(status: 503, headers: MockResponse.retryAfterHeader(retryAfter)),
            rate: rate,
            name: "serviceUnavailable(rate: \(rate)\(retryAfter.map { ", retryAfter: \($0)" } ?? ""))"
        )
    }

    /// Answers requests with `429 Too Many Requests`, with `Retry-After` when `retryAfter` is given.
    ///
    /// - Parameters:
    ///   - rate: The share of requests answered so, from 0 to 1.
    ///   - retryAfter: The delay to announce, in whole seconds (rounded up).
    public static func tooManyRequests(rate: Double = 1, retryAfter: Duration? = nil) -> Fault {
        Fault(
            .response(status: 429, headers: MockResponse.retryAfterHeader(retryAfter)),
            rate: rate,
            name: "tooManyRequests(rate: \(rate)\(retryAfter.map { ", retryAfter: \($0)" } ?? ""))"
        )
    }

    /// Revokes credentials in waves, as a server does when tokens expire: at every `count`-th request
    /// (counting from 0: requests `count`, `2 × count`, …) every `Authorization` value seen so far is
    /// revoked, and requests that still carry one get `401 Unauthorized` (with
    /// `WWW-Authenticate: Bearer error="invalid_token"`) without being sent. A credential first seen
    /// after a wave passes until the next one. Requests without `Authorization` pass.
    ///
    /// This makes the refresh storms that a token refresher must survive: every request in flight at a
    /// wave fails together, and each must retry with one new token.
    ///
    /// - Parameter count: Requests between waves; at least 1.
    public static func unauthorizedWaves(everyRequests count: Int) -> Fault {
        precondition(count > 0, "unauthorizedWaves needs a positive request count")
        return Fault(.unauthorizedWaves(.requests(count)), rate: 1, name: "unauthorizedWaves(everyRequests: \(count))")
    }

    /// Revokes credentials in waves every `period` of the transport's clock (at `period`, `2 × period`, …
    /// after the transport was made); otherwise like ``unauthorizedWaves(everyRequests:)``.
    ///
    /// - Parameter period: Time between waves; must be positive.
    public static func unauthorizedWaves(every period: Duration) -> Fault {
        precondition(period > .zero, "unauthorizedWaves needs a positive period")
        return Fault(.unauthorizedWaves(.time(period)), rate: 1, name: "unauthorizedWaves(every: \(period))")
    }

    // MARK: Limits

    /// Returns a copy that applies only to the requests whose arrival index (0 for the first) is in
    /// `range`.
    ///
    /// - Parameter range: The request indexes.
    public func forRequests(_ range: Range<Int>) -> Fault {
        var copy = self
        copy.requestRange = range
        return copy
    }

    /// Returns a copy that applies only to requests with `method` whose path matches `path`.
    ///
    /// - Parameters:
    ///   - method: The method, or `nil` for any.
    ///   - path: A path pattern as in ``MockRoute``.
    public func only(_ method: HTTPMethod?, _ path: String) -> Fault {
        var copy = self
        copy.route = MockRoute(method, path)
        return copy
    }

    /// Whether the fault's limits let it apply to request `index`.
    func covers(_ request: URLRequest, index: Int) -> Bool {
        if let requestRange, !requestRange.contains(index) { return false }
        if let route, route.match(request) == nil { return false }
        return true
    }
}
