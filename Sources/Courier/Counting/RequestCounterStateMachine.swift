/// A ``RequestCounter``'s counts and idle waiters, as a value: a start or an end goes in; the change to
/// publish and the waiters to resume come out.
///
/// Every start is followed by exactly one end, so `started == succeeded + failed + cancelled + inFlight`
/// holds after every step and `inFlight` never goes below zero. The waiters are handed back by the end
/// that brings `inFlight` to zero.
struct RequestCounterStateMachine<Waiter> {
    /// What an end produced.
    struct EndAction {
        /// The change to publish to the streams.
        var change: RequestCounter.Change
        /// The waiters to resume: all of them when nothing is in flight any more, otherwise none.
        var resume: [Waiter]
    }

    private(set) var counts = RequestCounter.Snapshot()
    /// The tasks in ``RequestCounter/waitUntilIdle()``.
    var idleWaiters = IdleWaiters<Waiter>()

    /// Whether no request is in flight, which is what ``RequestCounter/waitUntilIdle()`` waits for.
    var isIdle: Bool { counts.inFlight == 0 }

    /// A request started.
    mutating func start() -> RequestCounter.Change {
        counts.started += 1
        counts.inFlight += 1
        counts.peak = max(counts.peak, counts.inFlight)
        return RequestCounter.Change(event: .started, snapshot: counts)
    }

    /// A request ended; call exactly once per ``start()``.
    mutating func end(_ outcome: RequestCounter.Outcome) -> EndAction {
        assert(counts.inFlight > 0, "a request ended that never started")
        counts.inFlight -= 1
        let event: RequestCounter.Change.Event
        switch outcome {
        case .succeeded:
            counts.succeeded += 1
            event = .succeeded
        case .failed:
            counts.failed += 1
            event = .failed
        case .cancelled:
            counts.cancelled += 1
            event = .cancelled
        }
        return EndAction(
            change: RequestCounter.Change(event: event, snapshot: counts),
            resume: isIdle ? idleWaiters.takeAll() : []
        )
    }
}
