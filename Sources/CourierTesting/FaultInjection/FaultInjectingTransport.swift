public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Wraps any transport and makes it misbehave — latency, errors, error statuses, dropped connections,
/// waves of 401s — at seeded, reproducible rates, on an injected clock.
///
/// ```swift
/// let clock = ManualClock()
/// let chaos = FaultInjectingTransport(
///     wrapping: MockTransport { MockRoute.get("/items/:id") { request in .json(Item(id: request.parameters["id"]!)) } },
///     seed: 42,
///     clock: clock,
///     faults: [
///         .latency(.uniform(.milliseconds(20)...(.milliseconds(300)))),
///         .droppedConnection(rate: 0.1),
///         .serviceUnavailable(rate: 0.1, retryAfter: .seconds(1)),
///     ]
/// )
/// let client = Client(baseURL: base, transport: chaos, middleware: [.retry(.default)])
/// ```
///
/// **Reproducible**: what happens to a request depends only on the seed, its arrival index (0 for the
/// first request) and the fault's place in the list — each (request, fault) pair draws from its own
/// generator (``SplitMix64``), so the faults of request 7 are the same on every run whatever the other
/// requests drew. Requests that arrive one after another therefore meet the same faults every run;
/// concurrent requests may arrive in another order, but the same faults hit the same arrival indexes.
/// ``injected`` lists what was done to which request.
///
/// **Latency** sleeps on `clock` (a `ManualClock` in tests) before the request is sent or failed; a
/// cancelled request stops waiting with `CancellationError` and is not sent.
public final class FaultInjectingTransport: Transport, RequestRecording {
    /// One fault done to one request.
    public struct InjectedFault: Sendable, Hashable, CustomStringConvertible {
        /// What was done.
        public enum Kind: Sendable, Hashable {
            /// The request was delayed this long.
            case latency(Duration)
            /// The request failed with an error (its description) without being sent.
            case error(String)
            /// The request was answered with this status without being sent.
            case status(Int)
            /// The request was sent and its response thrown away: `URLError(.networkConnectionLost)`.
            case droppedAfterSending
            /// The request carried a revoked credential and got `401` without being sent.
            case revokedCredential
        }

        /// The request's arrival index (0 for the first request).
        public let requestIndex: Int
        /// What was done.
        public let kind: Kind

        /// Creates a record, for comparing with ``FaultInjectingTransport/injected``.
        ///
        /// - Parameters:
        ///   - requestIndex: The request's arrival index.
        ///   - kind: What was done.
        public init(requestIndex: Int, kind: Kind) {
            self.requestIndex = requestIndex
            self.kind = kind
        }

        /// For example `#3: status(503)`.
        public var description: String { "#\(requestIndex): \(kind)" }
    }

    private struct WaveState {
        var wave = 0
        var seen: Set<String> = []
        var revoked: Set<String> = []
    }

    private struct State {
        var requests: [URLRequest] = []
        var injected: [InjectedFault] = []
        var waves: [Int: WaveState] = [:]
    }

    private struct Plan {
        var latency = Duration.zero
        var answer: Fault.Kind?
        var dropAfterSending = false
        var injected: [InjectedFault.Kind] = []
    }

    private let base: any Transport
    private let seed: UInt64
    private let faults: [Fault]
    private let sleep: @Sendable (Duration) async throws -> Void
    private let elapsed: @Sendable () -> Duration
    private let state = LockedState(State())

    /// Creates a fault-injecting wrapper.
    ///
    /// - Parameters:
    ///   - base: The transport that answers the requests that get through.
    ///   - seed: The seed; equal seeds give equal faults.
    ///   - clock: The clock latency sleeps on and waves are timed by; `ContinuousClock` by default.
    ///   - faults: The faults, in order.
    public init<C: Clock<Duration>>(
        wrapping base: any Transport,
        seed: UInt64,
        clock: C = ContinuousClock(),
        faults: [Fault]
    ) {
        self.base = base
        self.seed = seed
        self.faults = faults
        self.sleep = { duration in try await clock.sleep(for: duration) }
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
    }

    /// Every request received, in arrival order (including those failed without being sent).
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// What was done to which request, in the order it was decided.
    public var injected: [InjectedFault] { state.withLock { $0.injected } }

    /// Sends `request` through the faults and, if it gets through, the wrapped transport.
    ///
    /// - Returns: The wrapped transport's response, or an injected one.
    /// - Throws: An injected error, the wrapped transport's error, `CancellationError`, or
    ///   `CourierError` (`.invalidRequest`) for a request that could not be sent safely.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        let now = elapsed()
        let plan = state.withLock { state in
            let index = state.requests.count
            state.requests.append(request)
            let plan = makePlan(for: request, index: index, now: now, state: &state)
            state.injected += plan.injected.map { InjectedFault(requestIndex: index, kind: $0) }
            return plan
        }
        if plan.latency > .zero {
            try await sleep(plan.latency)
        }
        try Task.checkCancellation()
        switch plan.answer {
        case .failure(let error):
            throw error
        case .response(let status, let headers):
            return try await MockResponse(status: status, headers: headers).httpResponse(for: request)
        default:
            break
        }
        let result = try await base.send(request)
        if plan.dropAfterSending {
            throw URLError(.networkConnectionLost)
        }
        return result
    }

    private func makePlan(for request: URLRequest, index: Int, now: Duration, state: inout State) -> Plan {
        var plan = Plan()
        for (position, fault) in faults.enumerated() where fault.covers(request, index: index) {
            var generator = SplitMix64.derived(seed: seed, UInt64(index), UInt64(position))
            if fault.rate < 1, generator.nextUnitInterval() >= fault.rate { continue }
            switch fault.kind {
            case .latency(let distribution):
                let delay = distribution.sample(using: &generator)
                plan.latency += delay
                plan.injected.append(.latency(delay))
            case .failure(let error):
                guard plan.answer == nil else { continue }
                plan.answer = .failure(error)
                plan.injected.append(.error(String(describing: error)))
            case .response(let status, _):
                guard plan.answer == nil else { continue }
                plan.answer = fault.kind
                plan.injected.append(.status(status))
            case .droppedAfterSending:
                guard !plan.dropAfterSending else { continue }
                plan.dropAfterSending = true
            case .unauthorizedWaves(let schedule):
                var waves = state.waves[position] ?? WaveState()
                let wave =
                    switch schedule {
                    case .requests(let count): index / count
                    case .time(let period): Int(now / period)
                    }
                if wave > waves.wave {
                    waves.revoked.formUnion(waves.seen)
                    waves.seen = []
                    waves.wave = wave
                }
                if let credential = request.value(forHTTPHeaderField: "Authorization") {
                    if waves.revoked.contains(credential) {
                        if plan.answer == nil {
                            plan.answer = .response(
                                status: 401,
                                headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#]
                            )
                            plan.injected.append(.revokedCredential)
                        }
                    } else {
                        waves.seen.insert(credential)
                    }
                }
                state.waves[position] = waves
            }
        }
        // A request answered without being sent cannot lose its response on the way back.
        if plan.dropAfterSending, plan.answer != nil {
            plan.dropAfterSending = false
        } else if plan.dropAfterSending {
            plan.injected.append(.droppedAfterSending)
        }
        return plan
    }
}
