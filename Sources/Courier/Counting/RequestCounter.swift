/// Counts the requests that pass through ``Middleware/counting(_:)``: how many are in flight, the peak,
/// and how each one ended.
///
/// ```swift
/// let counter = RequestCounter()
/// let client = Client(baseURL: base, middleware: [.counting(counter), .retry(.default)])
///
/// Task {                                               // an activity indicator, a gauge, a log
///     for await change in counter.changes() {
///         print(change.event, change.snapshot.inFlight)
///     }
/// }
/// _ = try await client.send(.get("/users/42") as Request<User>)
/// await counter.waitUntilIdle()                        // graceful shutdown: let in-flight calls finish
/// print(counter.snapshot)                              // started 1, succeeded 1, in flight 0, …
/// ```
///
/// **Invariants.** Every request that enters the middleware is counted as started exactly once and ends
/// exactly once, as succeeded, failed or cancelled, whatever happens to it. So
/// `started == succeeded + failed + cancelled + inFlight` always holds, and `inFlight` is never negative.
///
/// **Cost.** The counts live under one lock: the middleware updates them synchronously, two short lock
/// sections per request and no actor hop. ``snapshot`` and ``changes(bufferingPolicy:)`` read them
/// synchronously too; only ``waitUntilIdle()`` suspends. A counter is a reference, so several clients can
/// share one.
///
/// This is also how to read a ``Client``'s requests in flight: put `.counting(counter)` first in its
/// middleware. (The client keeps a count of its own only for ``Client/shutdown(gracePeriod:clock:)``.)
public final class RequestCounter: Sendable {
    /// The counts at one moment. All fields are read together, so they are consistent with each other.
    public struct Snapshot: Sendable, Hashable, CustomStringConvertible {
        /// Requests that have started and not yet ended.
        public var inFlight: Int
        /// The largest ``inFlight`` seen so far.
        public var peak: Int
        /// Requests that have started.
        public var started: Int
        /// Requests that ended with a response (whatever its status: put `.validatingStatus()`
        /// inside the counting middleware to count bad statuses as failures).
        public var succeeded: Int
        /// Requests that ended with an error other than cancellation (a timeout is a failure).
        public var failed: Int
        /// Requests that ended because their task was cancelled.
        public var cancelled: Int

        /// Creates a snapshot; the counter makes them, tests and adapters may too.
        ///
        /// - Parameters:
        ///   - inFlight: Requests in flight now.
        ///   - peak: The largest number in flight so far.
        ///   - started: Requests started so far.
        ///   - succeeded: Requests that ended with a response.
        ///   - failed: Requests that ended with an error.
        ///   - cancelled: Requests that ended because their task was cancelled.
        public init(
            inFlight: Int = 0,
            peak: Int = 0,
            started: Int = 0,
            succeeded: Int = 0,
            failed: Int = 0,
            cancelled: Int = 0
        ) {
            self.inFlight = inFlight
            self.peak = peak
            self.started = started
            self.succeeded = succeeded
            self.failed = failed
            self.cancelled = cancelled
        }

        /// Requests that have ended, one way or another.
        public var finished: Int { succeeded + failed + cancelled }

        /// For example `in flight 2 (peak 9), started 40, succeeded 35, failed 2, cancelled 1`.
        public var description: String {
            "in flight \(inFlight) (peak \(peak)), started \(started), succeeded \(succeeded), "
                + "failed \(failed), cancelled \(cancelled)"
        }
    }

    /// One change of the counts, as delivered by ``changes(bufferingPolicy:)``.
    public struct Change: Sendable, Hashable {
        /// What happened.
        public enum Event: Sendable, Hashable {
            /// The first element of every stream: the counts when you subscribed.
            case subscribed
            /// A request started.
            case started
            /// A request ended with a response.
            case succeeded
            /// A request ended with an error.
            case failed
            /// A request was cancelled.
            case cancelled
        }

        /// What happened.
        public var event: Event
        /// The counts right after it happened.
        public var snapshot: Snapshot
    }

    /// How a request ended.
    enum Outcome {
        case succeeded
        case failed
        case cancelled

        /// How a streamed call ended, from how its body ended.
        init(bodyEnding error: (any Error)?) {
            switch error {
            case .none: self = .succeeded
            case .some(let error) where error is CancellationError: self = .cancelled
            case .some: self = .failed
            }
        }
    }

    private struct State {
        // The transitions are the machine's (and tested on it). The streams are a registry beside it: adding
        // or dropping one is a dictionary edit, and every change is yielded to all of them under the lock.
        var machine = RequestCounterStateMachine<CheckedContinuation<Void, Never>>()
        var lastSubscriber = 0
        var subscribers: [Int: AsyncStream<Change>.Continuation] = [:]
    }

    // Every count, subscriber and waiter is guarded by this one lock, so that a change and its delivery to
    // the streams happen in one order for everybody.
    private let state = LockedState(State())

    /// Creates a counter with every count at zero.
    public init() {}

    deinit {
        let subscribers = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// The counts now.
    public var snapshot: Snapshot {
        state.withLock { $0.machine.counts }
    }

    /// Returns a stream of every change to the counts, starting with the counts now.
    ///
    /// Each call makes a new, independent stream. The first element has the event
    /// ``Change/Event/subscribed``; then every start and end arrives in the order it happened. The stream
    /// ends when the counter is deallocated or when the consuming task stops iterating.
    ///
    /// ```swift
    /// for await change in counter.changes(bufferingPolicy: .bufferingNewest(1)) {
    ///     gauge.record(change.snapshot.inFlight)          // a gauge only needs the latest value
    /// }
    /// ```
    ///
    /// - Parameter bufferingPolicy: What to keep while the consumer is slower than the requests. The
    ///   default keeps everything, so that no change is lost; a gauge or an activity indicator only needs
    ///   `.bufferingNewest(1)`.
    public func changes(
        bufferingPolicy: AsyncStream<Change>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self, bufferingPolicy: bufferingPolicy)
        let id = state.withLock { state in
            state.lastSubscriber += 1
            return state.lastSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            // Never called under the lock: the counter calls `finish()` only after releasing it.
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        state.withLock { state in
            let first = continuation.yield(Change(event: .subscribed, snapshot: state.machine.counts))
            if case .terminated = first { return }
            state.subscribers[id] = continuation
        }
        return stream
    }

    /// Suspends until no request is in flight; returns at once when none is.
    ///
    /// Any number of tasks may wait at once; all of them resume the moment the last request in flight ends.
    /// A waiting task that is cancelled stops waiting and returns (check `Task.isCancelled` if that matters).
    ///
    /// ```swift
    /// await counter.waitUntilIdle()    // before shutting the process down
    /// ```
    public func waitUntilIdle() async {
        await state.waitUntilIdle(in: \.machine.idleWaiters) { $0.machine.isIdle }
    }

    /// How many tasks are waiting in ``waitUntilIdle()`` (for tests).
    var idleWaiterCount: Int {
        state.withLock { $0.machine.idleWaiters.count }
    }

    /// How many streams from ``changes(bufferingPolicy:)`` are live (for tests).
    var subscriberCount: Int {
        state.withLock { $0.subscribers.count }
    }

    // MARK: Recording (used by the counting middleware)

    /// Records that a request started.
    func recordStart() {
        state.withLock { state in
            let change = state.machine.start()
            Self.publish(change, to: state.subscribers)
        }
    }

    /// Records that a request ended; call exactly once per ``recordStart()``.
    func recordEnd(_ outcome: Outcome) {
        let idleWaiters = state.withLock { state in
            let action = state.machine.end(outcome)
            Self.publish(action.change, to: state.subscribers)
            return action.resume
        }
        for waiter in idleWaiters { waiter.resume() }
    }

    private static func publish(_ change: Change, to subscribers: [Int: AsyncStream<Change>.Continuation]) {
        // Yielding under the lock keeps every stream in the order the changes happened. `yield` only
        // enqueues (it never calls `onTermination`), so it cannot re-enter the lock.
        for subscriber in subscribers.values { subscriber.yield(change) }
    }
}
