import Synchronization

/// The circuit breaker of one host, as a value: each event goes in, an action comes out.
///
/// Time is a `Duration` since the breaker's clock started, so the machine does not depend on a clock type
/// and tests drive it with plain values.
///
/// ```
///            failure × threshold                 cooldown passed, a request arrives
///   closed ─────────────────────► open ────────────────────────────────────────► half-open (1 probe)
///     ▲                            ▲                                                 │
///     │                            └──────────────── probe failed ───────────────────┤
///     └─────────────────────────────────────────── probe succeeded ──────────────────┘
/// ```
///
/// - In **closed**, every request is sent; a success resets the count of consecutive failures.
/// - In **open**, requests are rejected until the cooldown has passed.
/// - In **half-open**, one request (the probe) is sent and the others are rejected. If the probe ends
///   without a verdict (it was cancelled), the next request becomes the probe. If the probe has not ended
///   after another cooldown, a second probe is let through, so a hung probe cannot keep the circuit shut.
/// - Outcomes of requests admitted before the circuit opened, arriving while it is open or half-open, are
///   ignored: only probes decide there, and only the probe in flight: one that another probe replaced (it hung
///   past a cooldown) decides nothing, cancelled, failed or succeeded, so it can neither let a third probe in
///   beside the second nor reopen the circuit before the second's verdict.
struct CircuitBreakerStateMachine: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case closed(consecutiveFailures: Int)
        case open(until: Duration)
        /// `probeSince` is when the probe in flight was let through, or `nil` when none is in flight.
        case halfOpen(probeSince: Duration?)
    }

    /// What to do with a request.
    enum AdmitAction: Sendable, Equatable {
        /// Send it (closed).
        case send
        /// Send it as the probe (half-open).
        case sendProbe
        /// Fail it at once; the next probe can go in `retryAfter`.
        case reject(retryAfter: Duration)
    }

    /// How a request ended, as far as the breaker is concerned.
    enum Outcome: Sendable, Equatable {
        case success
        case failure
        /// No verdict (cancelled).
        case ignored
    }

    /// What a recorded outcome changed.
    enum RecordAction: Sendable, Equatable {
        case none
        /// The circuit opened (from closed, or again from half-open).
        case opened
        /// The probe succeeded and the circuit closed.
        case closed
    }

    let failureThreshold: Int
    let cooldown: Duration
    private(set) var state: State = .closed(consecutiveFailures: 0)
    /// The number of the latest probe let through (0 before the first): what a probe's request carries, so that
    /// its outcome counts only while it is the probe in flight. Drawn from one counter for the process, so that a
    /// probe of a machine that was dropped (its host's circuit closed clean) never matches a later machine's.
    private(set) var probeGeneration: UInt64 = 0
    private static let probeNumbers = Atomic<UInt64>(0)

    init(failureThreshold: Int, cooldown: Duration) {
        precondition(failureThreshold > 0, "failureThreshold must be at least 1")
        precondition(cooldown >= .zero, "cooldown must not be negative")
        self.failureThreshold = failureThreshold
        self.cooldown = cooldown
    }

    /// Whether the machine is in its initial state (closed, no failures), so a host's entry can be dropped.
    var isPristine: Bool { state == .closed(consecutiveFailures: 0) }

    /// Decides whether a request arriving at `now` may be sent.
    mutating func admit(now: Duration) -> AdmitAction {
        switch state {
        case .closed:
            return .send
        case .open(let until):
            guard now >= until else { return .reject(retryAfter: until - now) }
            return letProbeThrough(now: now)
        case .halfOpen(let probeSince?):
            let nextProbe = probeSince + cooldown
            guard now >= nextProbe else { return .reject(retryAfter: nextProbe - now) }
            return letProbeThrough(now: now)
        case .halfOpen(nil):
            return letProbeThrough(now: now)
        }
    }

    private mutating func letProbeThrough(now: Duration) -> AdmitAction {
        state = .halfOpen(probeSince: now)
        probeGeneration = Self.probeNumbers.wrappingAdd(1, ordering: .relaxed).newValue
        return .sendProbe
    }

    /// Records how a request ended at `now`; `probe` says whether it was admitted as the probe in flight now.
    mutating func record(_ outcome: Outcome, probe: Bool, now: Duration) -> RecordAction {
        record(outcome, probe: probe ? probeGeneration : nil, now: now)
    }

    /// Records how a request ended at `now`; `probe` is the ``probeGeneration`` it was admitted as a probe with, or
    /// `nil`. A probe that another replaced decides nothing, in any state: half-open, the new probe decides; closed
    /// again (the new probe succeeded), its late timeout or failure says nothing the new probe had not settled.
    mutating func record(_ outcome: Outcome, probe generation: UInt64?, now: Duration) -> RecordAction {
        if let generation, generation != probeGeneration { return .none }
        let probe = generation != nil
        switch (state, outcome) {
        case (_, .ignored):
            if probe, case .halfOpen = state { state = .halfOpen(probeSince: nil) }
            return .none
        case (.closed, .success):
            state = .closed(consecutiveFailures: 0)
            return .none
        case (.closed(let failures), .failure):
            guard failures + 1 >= failureThreshold else {
                state = .closed(consecutiveFailures: failures + 1)
                return .none
            }
            state = .open(until: now + cooldown)
            return .opened
        case (.halfOpen, .success) where probe:
            state = .closed(consecutiveFailures: 0)
            return .closed
        case (.halfOpen, .failure) where probe:
            state = .open(until: now + cooldown)
            return .opened
        case (.halfOpen, _), (.open, _):
            return .none
        }
    }
}
