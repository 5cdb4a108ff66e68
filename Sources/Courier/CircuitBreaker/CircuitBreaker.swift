public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A circuit breaker per host: after a run of failures it fails requests fast for a while instead of
/// sending them to a host that is down; the state behind ``Middleware/circuitBreaker(_:)``.
///
/// ```swift
/// let breaker = CircuitBreaker(.init(failureThreshold: 5, cooldown: .seconds(30)))
/// let client = Client(baseURL: baseURL, middleware: [.retry(.default), .circuitBreaker(breaker)])
/// // later: breaker.state(for: baseURL) == .open
/// ```
///
/// Each host (host and port) has its own circuit:
/// - **closed**: requests are sent. After `failureThreshold` consecutive failures the circuit opens.
/// - **open**: requests fail at once with ``CourierError/Code/circuitOpen``, without reaching the transport,
///   until `cooldown` has passed.
/// - **half-open**: the next request is let through as a probe while the others still fail fast. If the
///   probe succeeds, the circuit closes; if it fails, it opens for another cooldown. A cancelled probe
///   decides nothing and the next request probes instead; a probe still running after another cooldown
///   no longer blocks a new one.
///
/// What counts as a failure is ``Policy/isFailure``; by default transport errors, timeouts and `5xx`
/// responses. Any other outcome, a `404` for instance, shows that the host is up and counts as a success.
/// Cancellation by a caller that went away counts as neither (a timeout above that cancels a request at its
/// deadline is a timeout, a failure), and so does a request that never left the process: a layer inside shed it
/// (``CourierError/Code/concurrencyLimited``, ``CourierError/Code/rateLimited``, another circuit's
/// ``CourierError/Code/circuitOpen``), the client was shut down, or the request could not be built. A probe
/// shed so decides nothing, like a cancelled one.
///
/// The breaker remembers at most 4,096 hosts: past that, circuits a few failures short of opening are forgotten
/// first, so a client that calls many hosts (webhooks, a crawler) does not keep one entry per host forever.
///
/// Time comes from an injected clock (`ContinuousClock` by default; a manual clock in tests). The state
/// lives under a lock in this object; each host's logic is a value-type state machine. Hosts whose circuit
/// is closed with no failures take no memory.
public final class CircuitBreaker: Sendable {
    /// The state of one host's circuit.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Requests are sent; `consecutiveFailures` failures in a row so far.
        case closed(consecutiveFailures: Int)
        /// Requests fail fast until the cooldown has passed.
        case open
        /// The cooldown has passed: the next request (or the one in flight) is the probe.
        case halfOpen

        /// `closed(2)`, `open` or `half-open`.
        public var description: String {
            switch self {
            case .closed(let failures): "closed(\(failures))"
            case .open: "open"
            case .halfOpen: "half-open"
            }
        }
    }

    /// When a circuit opens and what counts as a failure.
    public struct Policy: Sendable {
        /// How many consecutive failures open the circuit; at least 1.
        public var failureThreshold: Int
        /// How long the circuit stays open before a probe is let through.
        public var cooldown: Duration
        /// Whether an outcome counts as a failure: the response, or the error the rest of the chain threw.
        /// `CancellationError` never reaches it, nor the error of a request that never left the process.
        public var isFailure: @Sendable (Result<HTTPURLResponse, any Error>) -> Bool

        /// Creates a policy.
        ///
        /// ```swift
        /// // Count 429 as a failure too.
        /// let policy = CircuitBreaker.Policy(failureThreshold: 3, cooldown: .seconds(10)) { outcome in
        ///     if case .success(let response) = outcome, response.statusCode == 429 { return true }
        ///     return CircuitBreaker.Policy.isTransportOrServerFailure(outcome)
        /// }
        /// ```
        ///
        /// - Parameters:
        ///   - failureThreshold: How many consecutive failures open the circuit; at least 1.
        ///   - cooldown: How long the circuit stays open before a probe is let through.
        ///   - isFailure: Whether an outcome counts as a failure; ``isTransportOrServerFailure(_:)`` by
        ///     default.
        public init(
            failureThreshold: Int = 5,
            cooldown: Duration = .seconds(30),
            isFailure: @escaping @Sendable (Result<HTTPURLResponse, any Error>) -> Bool = Policy
                .isTransportOrServerFailure
        ) {
            precondition(failureThreshold > 0, "failureThreshold must be at least 1")
            precondition(cooldown >= .zero, "cooldown must not be negative")
            self.failureThreshold = failureThreshold
            self.cooldown = cooldown
            self.isFailure = isFailure
        }

        /// The default failure test: a ``CourierError`` with code ``CourierError/Code/transport``,
        /// ``CourierError/Code/timedOut`` or ``CourierError/Code/nonHTTPResponse``, a `5xx` response, or a
        /// ``CourierError/Code/unacceptableStatus`` error for a `5xx` status (thrown by a status-validating
        /// layer nearer the transport).
        @Sendable
        public static func isTransportOrServerFailure(_ outcome: Result<HTTPURLResponse, any Error>) -> Bool {
            switch outcome {
            case .success(let response):
                return response.statusCode >= 500
            case .failure(let error as CourierError):
                switch error.code {
                case .transport, .timedOut, .nonHTTPResponse: return true
                case .unacceptableStatus: return (error.statusCode ?? 0) >= 500
                default: return false
                }
            case .failure:
                return false
            }
        }
    }

    /// What an admitted request carries until it ends.
    struct Ticket {
        let url: URL?
        /// The host key, when admitting needed it (some circuit was not closed-and-clean).
        let hostKey: String?
        /// The probe it was admitted as (the machine's ``CircuitBreakerStateMachine/probeGeneration`` then), or
        /// `nil`.
        let probe: UInt64?

        var isProbe: Bool { probe != nil }
    }

    /// The policy.
    public let policy: Policy

    private let elapsed: @Sendable () -> Duration
    private let onStateChange: (@Sendable (_ host: String, _ state: State) -> Void)?
    private let circuits = LockedState<[String: CircuitBreakerStateMachine]>([:])

    /// Creates a breaker.
    ///
    /// - Parameters:
    ///   - policy: When a circuit opens and what counts as a failure.
    ///   - clock: The clock cooldowns are measured on; `ContinuousClock` by default.
    ///   - onStateChange: Called with the host (`host:port`) and the new state whenever a circuit opens,
    ///     becomes half-open or closes; for logs and metrics. It runs synchronously on the request's path
    ///     and must be quick.
    public init<C: Clock>(
        _ policy: Policy = Policy(),
        clock: C = ContinuousClock(),
        onStateChange: (@Sendable (_ host: String, _ state: State) -> Void)? = nil
    ) where C.Duration == Duration {
        self.policy = policy
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.onStateChange = onStateChange
    }

    /// The state of the circuit for `url`'s host and port.
    ///
    /// - Parameter url: Any URL on the host.
    /// - Returns: The circuit's state; `.closed(consecutiveFailures: 0)` for a host never seen.
    public func state(for url: URL) -> State {
        let now = elapsed()
        let machine = circuits.withLock { $0[HostKey.of(url)] }
        return machine.map { Self.publicState($0.state, now: now) } ?? .closed(consecutiveFailures: 0)
    }

    /// Closes every circuit and forgets all failures.
    public func reset() {
        circuits.withLock { $0.removeAll() }
    }

    /// Admits `request` or throws ``CourierError/Code/circuitOpen``.
    func admit(_ request: URLRequest) throws -> Ticket {
        // The common case: every circuit is closed and clean (no entries). One lock, no key, no clock read.
        if circuits.withLock({ $0.isEmpty }) { return Ticket(url: request.url, hostKey: nil, probe: nil) }
        let hostKey = HostKey.of(request.url)
        let now = elapsed()
        let (action, probe, change) = circuits.withLock {
            circuits -> (CircuitBreakerStateMachine.AdmitAction, UInt64, State?) in
            guard var machine = circuits[hostKey] else { return (.send, 0, nil) }
            let before = machine.state
            let action = machine.admit(now: now)
            circuits[hostKey] = machine
            let change = before == machine.state ? nil : Self.publicState(machine.state, now: now)
            return (action, machine.probeGeneration, change)
        }
        if let change { onStateChange?(hostKey, change) }
        switch action {
        case .send:
            return Ticket(url: request.url, hostKey: hostKey, probe: nil)
        case .sendProbe:
            return Ticket(url: request.url, hostKey: hostKey, probe: probe)
        case .reject(let retryAfter):
            throw CourierError(
                .circuitOpen,
                message: "the circuit breaker for \(hostKey) is open; the next attempt may go in \(retryAfter)",
                request: request
            )
        }
    }

    /// Records how an admitted request ended.
    func record(_ outcome: CircuitBreakerStateMachine.Outcome, for ticket: Ticket) {
        // The common case, a success on a host whose circuit is clean, changes nothing.
        let isSuccessOrIgnored = outcome != .failure && !ticket.isProbe
        if isSuccessOrIgnored, circuits.withLock({ $0.isEmpty }) { return }
        let hostKey = ticket.hostKey ?? HostKey.of(ticket.url)
        if isSuccessOrIgnored, circuits.withLock({ $0[hostKey] == nil }) { return }
        let now = elapsed()
        let policy = self.policy
        let change = circuits.withLock { circuits -> State? in
            var machine =
                circuits[hostKey]
                ?? CircuitBreakerStateMachine(failureThreshold: policy.failureThreshold, cooldown: policy.cooldown)
            let action = machine.record(outcome, probe: ticket.probe, now: now)
            let isNew = circuits[hostKey] == nil
            circuits[hostKey] = machine.isPristine ? nil : machine
            if isNew, circuits.count > Self.trackedHostLimit { Self.forgetHosts(in: &circuits, keeping: hostKey) }
            switch action {
            case .none: return nil
            case .opened: return .open
            case .closed: return .closed(consecutiveFailures: 0)
            }
        }
        if let change { onStateChange?(hostKey, change) }
    }

    /// The most hosts whose circuits the breaker remembers. A client that calls many hosts (webhooks, a crawler)
    /// would otherwise keep an entry for every host that ever failed once.
    static let trackedHostLimit = 4096

    /// Makes room when more than ``trackedHostLimit`` hosts are remembered: forgets the closed circuits (a few
    /// failures short of opening), then, if more than half the limit is still there, any others but `kept`'s.
    /// A host forgotten starts again from a clean circuit: at worst it is probed once more. Runs once per half a
    /// limit of new hosts at most, so it costs O(1) per request on average.
    private static func forgetHosts(in circuits: inout [String: CircuitBreakerStateMachine], keeping kept: String) {
        circuits = circuits.filter { key, machine in
            if key == kept { return true }
            if case .closed = machine.state { return false }
            return true
        }
        var excess = circuits.count - trackedHostLimit / 2
        guard excess > 0 else { return }
        for key in Array(circuits.keys) where key != kept && excess > 0 {
            circuits[key] = nil
            excess -= 1
        }
    }

    /// How many hosts the breaker remembers now (for tests).
    var trackedHosts: Int { circuits.withLock { $0.count } }

    /// Classifies what the rest of the chain returned or threw for `request`.
    func outcome(
        of result: Result<HTTPURLResponse, any Error>,
        for request: URLRequest
    ) -> CircuitBreakerStateMachine.Outcome {
        if case .failure(let error) = result {
            if error is CancellationError || Task.isCancelled {
                // Cancelled by a timeout above at its deadline: the host did not answer in time, as a transport that
                // enforces the deadline itself reports it (`timedOut`), whatever layers sit between. A caller that
                // went away says nothing about the host.
                guard let deadline = Deadline.passedAbove else { return .ignored }
                return policy.isFailure(.failure(deadline.passedError(for: request))) ? .failure : .success
            }
            // Refused on this side before anything reached the host: it says nothing about the host's health.
            if let error = error as? CourierError, Self.refusedBeforeSending.contains(error.code) { return .ignored }
        }
        return policy.isFailure(result) ? .failure : .success
    }

    /// The errors of a request that never left this process: a layer inside shed it (a full queue, a rate
    /// limit, another open circuit), the client was shut down, or the request could not be built.
    static let refusedBeforeSending: Set<CourierError.Code> = [
        .concurrencyLimited, .rateLimited, .circuitOpen, .clientShutDown, .invalidRequest, .encodingFailed,
    ]

    private static func publicState(_ state: CircuitBreakerStateMachine.State, now: Duration) -> State {
        switch state {
        case .closed(let failures): .closed(consecutiveFailures: failures)
        case .open(let until): now >= until ? .halfOpen : .open
        case .halfOpen: .halfOpen
        }
    }
}
