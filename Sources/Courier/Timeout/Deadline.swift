/// The time by which the current call must be over, shared with every layer below the timeout that set it.
///
/// The outermost ``Middleware/timeout(_:clock:)`` sets ``current`` for the rest of the chain (a task-local
/// value, so child tasks see it too). Layers below use it:
/// - ``Middleware/retry(_:clock:)`` never sleeps past it: when the next backoff would end after the
///   deadline, it stops and returns the last response or throws the last error at once;
/// - an inner (per-attempt) timeout waits for the smaller of its own duration and ``timeLeft``.
///
/// Your own middleware can read it too, for example to pass the time left to a server:
///
/// ```swift
/// Middleware { request, next in
///     var request = request
///     if let deadline = Deadline.current {
///         let milliseconds = deadline.timeLeft / .milliseconds(1)
///         request.setValue("\(Int(milliseconds))", forHTTPHeaderField: "X-Request-Timeout-Ms")
///     }
///     return try await next(request)
/// }
/// ```
///
/// **Clocks.** A deadline is an instant of the clock that made it, kept together with that clock, so
/// ``timeLeft`` is always measured on the right clock. Layers compare deadlines through ``timeLeft`` (a
/// `Duration`), never through instants, so a deadline made on one clock can bound a layer that sleeps on
/// another; in practice every layer of a client should use the same clock (a `ManualClock` in tests).
///
/// A deadline on its own enforces nothing: only a timeout cancels work. A server can set ``current``
/// from an incoming request's deadline with `Deadline.$current.withValue(…)`, and every outgoing call's
/// timeout then waits no longer than the time left. Run work that must not inherit the deadline (a
/// background refresh, for example) inside `Deadline.$current.withValue(nil) { … }`; note that `Task { }`
/// inherits task-local values, while `Task.detached { }` does not.
public struct Deadline: Sendable {
    /// The deadline of the call the current task is part of, or `nil` when no timeout is in effect.
    @TaskLocal public static var current: Deadline?

    private let instant: any DeadlineInstant

    /// The duration of the timeout that set this deadline, reported in ``CourierError/timeout`` when it
    /// passes.
    public let timeout: Duration

    /// The work a timeout armed in its timer for this deadline when it left enforcing it to the transport: the
    /// transport attaches the task that reads a body to it, so that the timer cancels the read at the deadline
    /// (see ``DeadlineTimer/attach(_:)``). ``DeadlineWork/enforcedAbove`` when the timeout runs the chain in a
    /// child task it cancels itself; `nil` for a deadline set any other way.
    private(set) var work: DeadlineWork?

    /// The same deadline, as the timeout that set it binds it for the child task it cancels at the deadline: a
    /// transport then leaves the deadline to that timeout instead of timing the call a second time. `work` is the
    /// child's (no owner), which the timeout marks as fired before it cancels the child, so that the layers below
    /// can tell its cancellation from their caller's (see ``passedAbove``).
    func enforcedAbove(by work: DeadlineWork) -> Deadline {
        var deadline = self
        deadline.work = work
        return deadline
    }

    /// Whether a timeout above enforces this deadline by cancelling the task the transport runs in (see
    /// ``enforcedAbove(by:)``): its work has no owner for a transport to attach to.
    var isEnforcedAbove: Bool { work.map { $0.owner == nil } ?? false }

    /// Creates a deadline `duration` from now on `clock`.
    ///
    /// ```swift
    /// let deadline = Deadline(after: .seconds(2))
    /// try await Deadline.$current.withValue(deadline) {
    ///     try await client.send(request)   // timeouts inside wait at most the time left
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long from now.
    ///   - clock: The clock the deadline is measured on; `ContinuousClock` by default.
    public init<C: Clock<Duration>>(after duration: Duration, clock: C = ContinuousClock()) {
        self.init(at: clock.now.advanced(by: duration), on: clock, timeout: duration)
    }

    init<C: Clock<Duration>>(at instant: C.Instant, on clock: C, timeout: Duration, work: DeadlineWork? = nil) {
        self.instant = ClockInstant(clock: clock, instant: instant)
        self.timeout = timeout
        self.work = work
    }

    /// The time left until the deadline, measured now on the deadline's clock; zero or negative once it
    /// has passed.
    public var timeLeft: Duration { instant.timeLeft }

    /// Whether the deadline has passed.
    public var hasPassed: Bool { instant.timeLeft <= .zero }

    /// Whether the deadline's clock runs in real time (`ContinuousClock` or `SuspendingClock`), so that a
    /// transport may hand it to a network library as a wall-clock deadline. A deadline on a test's manual
    /// clock is virtual: only the timeout middleware that set it enforces it.
    var isRealTime: Bool { instant.isRealTime }
}

/// An instant together with the clock it belongs to, so that the time left can be measured without
/// knowing the clock's type. The generic wrapper is what makes `now.duration(to:)` callable: it is not
/// available on `any Clock<Duration>`.
private protocol DeadlineInstant: Sendable {
    var timeLeft: Duration { get }
    var isRealTime: Bool { get }
}

private struct ClockInstant<C: Clock<Duration>>: DeadlineInstant {
    let clock: C
    let instant: C.Instant

    var timeLeft: Duration { clock.now.duration(to: instant) }
    var isRealTime: Bool { clock is ContinuousClock || clock is SuspendingClock }
}
