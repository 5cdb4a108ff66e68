/// The shared calls of a ``RequestCoalescer``, as a value: each event goes in, what to do comes out.
///
/// `Key` identifies identical requests, `Waiter` is what a caller waits on (a continuation), `Call` is the task
/// running a shared call; tests use plain values for all three. The coalescer keeps the machine under its lock,
/// and starts, cancels and resumes outside it.
///
/// The rules:
/// - **One flight per key.** The first caller of a key starts a flight; identical callers join it while it
///   runs. Each flight has an id, so events about an older flight of the same key are told apart.
/// - **The flight belongs to nobody.** A caller that leaves (cancelled) is resumed alone; the flight goes on
///   while anybody waits. When the last caller leaves, the flight is forgotten and its call is cancelled;
///   the next caller of the key starts a new one.
/// - **The call is attached after it starts**, because it is made outside the lock: a flight abandoned
///   before its call was attached hands the call back to be cancelled.
/// - **Finishing** hands every waiter of that flight the one result.
struct RequestCoalescerStateMachine<Key: Hashable, Waiter, Call> {
    private struct Flight {
        let id: Int
        var waiters: [Int: Waiter]
        /// `nil` until the caller that started the flight has made the call and attached it.
        var call: Call?
    }

    /// What ``join(_:waiter:id:isCancelled:)`` decided.
    enum JoinAction: Equatable {
        /// The caller joined a flight in progress.
        case joined
        /// The caller started flight `flightID`: make its call, then ``attach(_:to:flightID:)`` it.
        case start(flightID: Int)
        /// The caller was cancelled: resume its waiter with `CancellationError`.
        case cancelled
    }

    /// What ``leave(_:waiter:)`` decided.
    enum LeaveAction {
        /// The caller was no longer waiting (its flight finished): nothing to do.
        case none
        /// Resume the waiter with `CancellationError`; the flight goes on for the others.
        case resume(Waiter)
        /// Resume the waiter with `CancellationError`, and cancel the flight's call (if it was attached
        /// already; otherwise ``attach(_:to:flightID:)`` hands it back).
        case resumeAndCancel(Waiter, Call?)
    }

    private var flights: [Key: Flight] = [:]
    private var lastFlightID = 0
    private var lastWaiterID = 0

    init() {}

    /// How many flights are in progress.
    var flightCount: Int { flights.count }

    /// How many callers are waiting, over all flights.
    var waiterCount: Int { flights.values.reduce(0) { $0 + $1.waiters.count } }

    // MARK: Events

    /// Gives a caller the id it leaves under, taken before it may be cancelled.
    mutating func makeWaiterID() -> Int {
        lastWaiterID += 1
        return lastWaiterID
    }

    /// A caller of `key` waits on `waiter` under `id`; `isCancelled` is its task's cancellation, read under
    /// the same lock, so a cancellation handler that runs later finds the waiter.
    mutating func join(_ key: Key, waiter: Waiter, id: Int, isCancelled: Bool) -> JoinAction {
        if isCancelled { return .cancelled }
        if flights[key] != nil {
            flights[key]!.waiters[id] = waiter
            return .joined
        }
        lastFlightID += 1
        flights[key] = Flight(id: lastFlightID, waiters: [id: waiter], call: nil)
        return .start(flightID: lastFlightID)
    }

    /// The call of flight `flightID` was made.
    ///
    /// - Returns: `false` when that flight is gone already (every caller left, or it finished): cancel the call.
    mutating func attach(_ call: Call, to key: Key, flightID: Int) -> Bool {
        guard flights[key]?.id == flightID else { return false }
        flights[key]!.call = call
        return true
    }

    /// The caller of `key` waiting under `id` was cancelled.
    mutating func leave(_ key: Key, waiter id: Int) -> LeaveAction {
        guard let waiter = flights[key]?.waiters.removeValue(forKey: id) else { return .none }
        guard flights[key]!.waiters.isEmpty else { return .resume(waiter) }
        // The last caller has gone: forget the flight (a new caller starts afresh) and cancel its call.
        return .resumeAndCancel(waiter, flights.removeValue(forKey: key)!.call)
    }

    /// Flight `flightID` of `key` has its result.
    ///
    /// - Returns: Its waiters, to resume with the result; none when the flight is gone (every caller left) or a
    ///   newer flight of the key is in progress.
    mutating func finish(_ key: Key, flightID: Int) -> [Waiter] {
        guard let flight = flights[key], flight.id == flightID else { return [] }
        flights[key] = nil
        return Array(flight.waiters.values)
    }
}
