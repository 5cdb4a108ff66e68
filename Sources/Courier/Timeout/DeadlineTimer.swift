/// Enforces the deadlines of one timeout middleware with a single sleeping task, instead of a timer per
/// request.
///
/// **Why.** A timer per request (a second child task sleeping on the clock) costs about 6 µs of CPU per
/// request on Linux once the request suspends, and a cancelled `Task.sleep` leaves its timer behind in the
/// runtime until its deadline: a server doing 20,000 requests a second through a 10-second timeout keeps
/// 200,000 dead timers alive. Here a request costs three short critical sections; one driver task per
/// middleware sleeps until the earliest deadline and cancels the requests that pass it.
///
/// **Why a queue, not a heap.** Every deadline in one timer is "now plus the same duration", and a timeout arms
/// it as soon as it has read the clock, before any of the chain runs, so they arrive in order (two threads may
/// swap two deadlines a few microseconds apart, which delays the earlier by as much): registering is an append,
/// and the driver only ever looks at the head. (A timeout whose
/// enclosing deadline is nearer than its own does not use the timer; see `TimeoutRunner`.) Requests that
/// finish are dropped from the head as they finish, so the queue holds about as many entries as there are
/// requests in flight; a straggler at the head keeps the finished requests behind it until it ends, at most
/// one timeout's worth of requests.
///
/// **The driver** is a detached task started by the first request that needs it. It wakes at the head's
/// deadline, cancels every request whose deadline has passed, and sleeps until the next one; it ends when it
/// wakes to an empty queue, so an idle middleware holds no task longer than one timeout.
///
/// **Cancelling a request.** The request's work runs in a child task that hands its `UnsafeCurrentTask` to
/// the timer when it starts and takes it back, under the timer's lock, before it ends; the driver cancels
/// it only while holding it, so the task is alive when it is cancelled. `cancel()` runs the task's
/// cancellation handlers, which are arbitrary code (a transport's), so the driver never calls it under the
/// lock: it marks the work as being cancelled, unlocks, cancels, and a work that ends in that window waits
/// (suspended, not spinning) until the driver is done with it.
///
/// **Work a transport attaches to.** A timeout that leaves its deadline to the transport (see `TimeoutRunner`)
/// arms work with no task, in the same order, and hands it down in the ``Deadline``. The one wait the network
/// library does not bound, a body still arriving, runs in a child task that lends itself to the work
/// (``attach(_:)``) and takes itself back (``detach(_:)``) the same way, so the driver cancels it at the
/// deadline; one attempt after another may attach under one deadline, two at once may not. The timeout lets the
/// work go when its call returns (``release(_:)``).
///
/// **No separate state machine.** The state is split between the timer's queue and each request's `DeadlineWork`
/// (a class, so the request's task and the driver reach the same object without a lookup). A value-type machine
/// would have to find each work by an id, one more hash look-up and table entry per request on the hot path that
/// `InstructionCounts` measures. The transitions are the short functions below (`begin`, `tryEnd`, `arm`,
/// `attach`, `detach`, `release`, `takeDue`, `cancel`); `DeadlineTimerTests` and `DeadlineAttachAttackTests` drive
/// them on a manual clock.
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

final class DeadlineTimer<C: Clock<Duration>>: Sendable {
    typealias Work = DeadlineWork

    private struct Entry {
        let fireAt: C.Instant
        let work: Work
    }

    private struct State {
        /// Deadlines in the order they were registered (and so, in practice, in time order); entries before
        /// `head` are spent.
        var queue: [Entry] = []
        var head = 0
        var driverIsRunning = false

        var pending: Int { queue.count - head }

        /// Drops ended work from the head, and compacts the array once most of it is spent.
        mutating func dropEndedHeads() {
            while head < queue.count, queue[head].work.hasEnded {
                head += 1
            }
            if head == queue.count {
                queue.removeAll(keepingCapacity: queue.capacity <= 1_024)
                head = 0
            } else if head >= 256, head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }
    }

    let clock: C
    private let state = LockedState(State())

    init(clock: C) {
        self.clock = clock
    }

    /// How many deadlines are registered and not yet spent (ended work that is not at the head yet
    /// included); for tests.
    var pendingCount: Int {
        state.withLock { $0.pending }
    }

    /// Whether the driver task is running (awake or asleep); for tests.
    var driverIsRunning: Bool {
        state.withLock { $0.driverIsRunning }
    }

    // MARK: The work's side (called from the work's child task)

    /// Hands the current task to the timer; the first thing the work's child task does.
    func begin(_ work: Work) {
        withUnsafeCurrentTask { task in
            guard let task else { preconditionFailure("a timeout's work runs in a task") }
            let cancelNow = state.withLock { _ in
                // The driver found the work's deadline passed before the task started (only possible where
                // a child task does not start at once): the work cancels itself.
                if work.didFire { return true }
                work.state = .running(task)
                return false
            }
            if cancelNow { task.cancel() }
        }
    }

    /// Takes the task back from the timer; the last thing the work's child task does.
    ///
    /// - Returns: `false` if the driver is cancelling the task at this very moment; the work must then
    ///   call ``endAfterCancellation(_:)`` before it ends.
    func tryEnd(_ work: Work) -> Bool {
        state.withLock { state in Self.tryEnd(work, in: &state) }
    }

    /// Waits until the driver has finished cancelling the work's task, then takes the task back.
    func endAfterCancellation(_ work: Work) async {
        await afterDriver(work, Self.tryEnd)
    }

    /// Makes `transition`, waiting first (suspended) for the driver to finish cancelling the work's task if it is
    /// doing so: `transition` returns `false` then, and the driver resumes the waiter once it is done.
    private func afterDriver(_ work: Work, _ transition: (Work, inout State) -> Bool) async {
        if state.withLock({ transition(work, &$0) }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let doneNow = state.withLock { state in
                if transition(work, &state) { return true }
                work.waiter = continuation
                return false
            }
            if doneNow { continuation.resume() }
        }
        _ = state.withLock { transition(work, &$0) }
    }

    // MARK: A transport's side (work armed by a timeout that runs in the caller's own task)

    /// Lends the current task to `work`, which a timeout armed without a task of its own (the transport enforces
    /// its deadline, see `TimeoutRunner`): until ``detach(_:)``, the driver cancels this task at the work's
    /// deadline. A task that attaches to work whose deadline has passed cancels itself at once.
    ///
    /// - Returns: `false`, and nothing changes, when the work has ended or another task holds it (two attempts
    ///   under one deadline at once); the caller then bounds its wait another way.
    func attach(_ work: Work) -> Bool {
        attach(work, cancelling: nil)
    }

    /// Lends the current task to `work` as ``attach(_:)`` does; with `action`, the driver calls `action` at the
    /// work's deadline instead of cancelling the task. A transport that waits in the caller's own task (a
    /// continuation its network library resumes) attaches that way: the action ends the exchange, and the caller's
    /// task is never cancelled. Work whose deadline has passed gets the action (or the cancellation) at once.
    func attach(_ work: Work, cancelling action: (@Sendable () -> Void)?) -> Bool {
        withUnsafeCurrentTask { task in
            guard let task else { preconditionFailure("a deadline's work is attached from a task") }
            let attached = state.withLock { _ -> Bool? in
                if work.hasEnded || work.isReleased { return nil }
                if work.didFire { return false }
                guard case .starting = work.state else { return nil }
                work.state = .running(task)
                work.action = action
                return true
            }
            switch attached {
            case nil: return false
            case false?:
                if let action { action() } else { task.cancel() }
                return true
            case true?: return true
            }
        }
    }

    /// Takes back the task ``attach(_:)`` lent, waiting first if the driver is cancelling it at this moment;
    /// the work is then free for the next attempt under the same deadline, or ends if the timeout that armed it
    /// has let it go (see ``release(_:)``).
    func detach(_ work: Work) async {
        await afterDriver(work, Self.detach)
    }

    /// Whether a task is attached to `work` (or being cancelled by the driver); for tests.
    func holdsTask(_ work: Work) -> Bool {
        state.withLock { _ in
            switch work.state {
            case .running, .cancelling: true
            case .starting, .cancelled, .ended: false
            }
        }
    }

    /// Frees `work` of its task unless the driver is cancelling it, and ends it if its timeout has let it go; a
    /// work that has fired stays fired.
    private static func detach(_ work: Work, in state: inout State) -> Bool {
        switch work.state {
        case .cancelling: return false
        case .running:
            work.action = nil
            guard work.isReleased else {
                work.state = .starting
                return true
            }
            work.markEnded()
            state.dropEndedHeads()
        case .starting, .cancelled, .ended: break
        }
        return true
    }

    /// Lets go of `work`, which a timeout armed for a transport to attach to (see ``attach(_:)``), when the
    /// timeout is done: the work ends now, unless a task is still attached to it. That task is not part of the
    /// timeout's call (the call's own body reads detach before the call returns) but inherited the call's
    /// deadline: a `Task { }` that a log sink, say, started under it. It stays bounded by that deadline: the
    /// driver still cancels it when the deadline passes, and the work ends when it detaches or is cancelled.
    /// Never waits: the timeout's own task is not the one the driver cancels.
    func release(_ work: Work) {
        state.withLock { state in
            switch work.state {
            case .running, .cancelling:
                work.isReleased = true
            case .starting, .cancelled, .ended:
                work.markEnded()
                state.dropEndedHeads()
            }
        }
    }

    /// Ends `work` unless the driver is cancelling it.
    private static func tryEnd(_ work: Work, in state: inout State) -> Bool {
        if case .cancelling = work.state { return false }
        work.markEnded()
        state.dropEndedHeads()
        return true
    }

    // MARK: The caller's side

    /// Registers `work`'s deadline, unless the work has already ended; starts the driver if none runs.
    func arm(_ work: Work, at fireAt: C.Instant) {
        let startDriver = state.withLock { state in
            if work.hasEnded { return false }
            state.queue.append(Entry(fireAt: fireAt, work: work))
            if state.driverIsRunning { return false }
            state.driverIsRunning = true
            return true
        }
        if startDriver {
            Task.detached { await self.drive() }
        }
    }

    // MARK: The driver

    private func drive() async {
        while true {
            let (due, next) = state.withLock { state in Self.takeDue(at: clock.now, from: &state) }
            for work in due {
                cancel(work)
            }
            guard let next else { return }
            // Nothing cancels the driver; if something did, it would only wake early and look again.
            try? await clock.sleep(until: next, tolerance: nil)
        }
    }

    /// Takes the work whose deadline has passed (marking it as being cancelled) and returns the next
    /// deadline, or `nil` (and marks the driver stopped) when nothing is left.
    private static func takeDue(at now: C.Instant, from state: inout State) -> ([Work], C.Instant?) {
        var due: [Work] = []
        while state.head < state.queue.count {
            let entry = state.queue[state.head]
            if entry.work.hasEnded {
                state.head += 1
                continue
            }
            guard entry.fireAt <= now else { break }
            state.head += 1
            // A timeout's own child that its caller cancelled before the deadline, still unwinding: the caller's
            // cancellation, not the timeout's (the layers below must not read it as a timeout).
            if entry.work.owner == nil, case .running(let task) = entry.work.state, task.isCancelled { continue }
            entry.work.markFired()
            if case .running(let task) = entry.work.state {
                entry.work.state = .cancelling(task)
                due.append(entry.work)
            }
        }
        state.dropEndedHeads()
        guard state.pending > 0 else {
            state.driverIsRunning = false
            return (due, nil)
        }
        return (due, state.queue[state.head].fireAt)
    }

    /// Cancels a work marked as being cancelled, outside the lock, then lets a work that ended meanwhile go.
    private func cancel(_ work: Work) {
        let (task, action) = state.withLock { _ -> (UnsafeCurrentTask?, (@Sendable () -> Void)?) in
            if case .cancelling(let task) = work.state { return (task, work.action) }
            return (nil, nil)
        }
        if let action { action() } else { task?.cancel() }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            work.action = nil
            if work.isReleased {
                work.markEnded()
                state.dropEndedHeads()
            } else {
                work.state = .cancelled
            }
            defer { work.waiter = nil }
            return work.waiter
        }
        waiter?.resume()
    }
}

/// One request's work, as a ``DeadlineTimer`` sees it.
final class DeadlineWork: @unchecked Sendable {
    // @unchecked Sendable: `state`, `waiter`, `action` and `isReleased` are only touched under the owning timer's lock;
    // `response` is written by the timeout's child before it ends and taken by the timeout after the child's group
    // is done.
    /// The timer that armed this work for a transport to attach to (see ``DeadlineTimer/attach(_:)``); `nil`
    /// for the work of a timeout's own child task.
    let owner: (any DeadlineWorkOwner)?

    init(owner: (any DeadlineWorkOwner)? = nil) {
        self.owner = owner
    }

    /// What stands for the work of a deadline whose timeout runs the chain in a child task and cancels it at the
    /// deadline itself, for asking a transport whether it enforces deadlines (``Deadline/enforcedAbove(by:)``
    /// binds the child's own work): never armed, no owner. A transport that enforces deadlines leaves such a
    /// deadline to the timeout; it would otherwise race a timer of its own per call, a second child task and a
    /// sleeping timer on top of the timeout's.
    static let enforcedAbove = DeadlineWork()

    fileprivate var state = DeadlineWorkState.starting
    fileprivate var waiter: CheckedContinuation<Void, Never>?
    /// What the driver calls at the deadline instead of cancelling the attached task (see
    /// ``DeadlineTimer/attach(_:cancelling:)``); let go when the task detaches or the driver is done with it.
    fileprivate var action: (@Sendable () -> Void)?
    /// The response of a timeout's own child task, written by the child before it ends and taken by the timeout
    /// once the child's group is done (which orders the two); never touched by the timer. Taken, not read: ended
    /// work can wait in the timer's queue behind a request still in flight, for up to one timeout. Work armed for
    /// a transport to attach to (`owner` set) never holds one.
    var response: (Data, HTTPURLResponse)?

    /// Returns ``response`` and forgets it.
    func takeResponse() -> (Data, HTTPURLResponse)? {
        defer { response = nil }
        return response
    }

    /// Whether the timeout that armed this work for a transport has let it go while a task was still attached
    /// (see ``DeadlineTimer/release(_:)``): the work ends when that task detaches or is cancelled.
    fileprivate var isReleased = false
    // Written under the lock too, but also read without it: by the caller after the work has ended, and
    // (`ended`) right after starting it, to skip registering a deadline for work that is already done.
    private let fired = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)

    /// Whether the deadline passed and the driver cancelled (or is cancelling) the work.
    var didFire: Bool { fired.load(ordering: .acquiring) }

    /// Whether the work has ended; `false` may be stale, `true` is not.
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// Marks the deadline as passed, before the work is cancelled: the timer's driver, or a timeout's own race.
    func markFired() { fired.store(true, ordering: .releasing) }

    fileprivate func markEnded() {
        state = .ended
        ended.store(true, ordering: .releasing)
    }
}

/// A ``DeadlineTimer`` as a transport reaches it through a ``Deadline``, whatever the timer's clock.
protocol DeadlineWorkOwner: AnyObject, Sendable {
    func attach(_ work: DeadlineWork) -> Bool
    func attach(_ work: DeadlineWork, cancelling action: (@Sendable () -> Void)?) -> Bool
    func detach(_ work: DeadlineWork) async
    func holdsTask(_ work: DeadlineWork) -> Bool
}

extension DeadlineTimer: DeadlineWorkOwner {}

private enum DeadlineWorkState {
    /// Created, and no task runs it yet: the child task has not started, or (work a transport attaches to)
    /// no task is attached.
    case starting
    /// Running in `task`, which the driver may cancel.
    case running(UnsafeCurrentTask)
    /// The driver is cancelling `task` outside the lock; the work must not end until it is done.
    case cancelling(UnsafeCurrentTask)
    /// Cancelled by the driver; it no longer holds the task.
    case cancelled
    /// The work has ended.
    case ended
}
