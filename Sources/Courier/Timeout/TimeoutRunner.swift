import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The race between the rest of the chain and the deadline.
enum TimeoutRunner {
    private enum Outcome: Sendable {
        case response(Data, HTTPURLResponse)
        case deadlinePassed
    }

    /// Set by the work when it ends; read right after it was started to learn whether it finished without
    /// suspending. Relaxed ordering is enough: a stale `false` only arms a timer that was not needed. No state
    /// machine: one flag that goes from `false` to `true` once.
    private final class Finished: Sendable {
        private let value = Atomic<Bool>(false)

        var isSet: Bool { value.load(ordering: .relaxed) }

        func set() { value.store(true, ordering: .relaxed) }
    }

    static func run<C: Clock<Duration>>(
        _ duration: Duration,
        clock: C,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        let now = clock.now
        let (deadline, isOwn, wait) = deadline(after: duration, from: now, on: clock)
        let tracking = CallTracking.here()
        if wait > .zero, next.transportEnforces(deadline) {
            return try await runEnforcedByTransport(
                deadline,
                isOwn: isOwn,
                tracking: tracking,
                request: request,
                next: next
            )
        }
        return try await race(
            deadline,
            isOwn: isOwn,
            tracking: tracking,
            wait: wait,
            from: now,
            on: clock,
            request: request
        ) {
            try await next($0)
        }
    }

    /// The deadline a timeout of `duration` starting at `now` waits for, and how long that is: its own, or an
    /// enclosing one that is nearer (`isOwn` is then `false`, and the error reports the enclosing timeout).
    private static func deadline<C: Clock<Duration>>(
        after duration: Duration,
        from now: C.Instant,
        on clock: C
    ) -> (deadline: Deadline, isOwn: Bool, wait: Duration) {
        if let outer = Deadline.current, case let left = outer.timeLeft, left < duration {
            return (outer, false, left)
        }
        return (Deadline(at: now.advanced(by: duration), on: clock, timeout: duration), true, duration)
    }

    /// The rest of the chain in the caller's own task, when the transport enforces the deadline and every
    /// layer in between waits only within it (see `DeadlineEnforcingTransport`): no child task, and so no
    /// extra task switch when the response comes back. The transport ends the exchange at the deadline; an
    /// error thrown once the deadline has passed is reported as this timeout's.
    @inline(__always)
    private static func runEnforcedByTransport(
        _ deadline: Deadline,
        isOwn: Bool,
        tracking: CallTracking,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        do {
            return try await tracking.run(under: deadline) { try await next(request) }
        } catch {
            // The transport ends the exchange at the deadline, in whatever error it has for that.
            guard deadline.hasPassed else { throw error }
            // The caller's own cancellation wins over a deadline that passed at the same time.
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: isOwn, tracking: tracking, after: error)
        }
    }

    /// What the caller gets for `error`, thrown by the rest of the chain while this timeout's timer had not
    /// fired: the error as it is, unless it is a nearer deadline's `timedOut` (an inner timeout's, or a
    /// transport's) and this timeout's deadline has passed too. Then the call ran out of its own time, and it
    /// reports this timeout however late a busy machine runs the timer: a retry that finds no time left
    /// rethrows the last attempt's timeout, which the timer would otherwise have beaten or not by chance. Other
    /// errors (a status the server sent, a failed connection) pass through as they are, late or not. The
    /// caller's own cancellation wins over a deadline that passed at the same time.
    private static func failure(
        _ error: any Error,
        request: URLRequest,
        deadline: Deadline,
        isOwn: Bool,
        tracking: CallTracking
    ) -> any Error {
        guard (error as? CourierError)?.code == .timedOut, deadline.hasPassed else { return error }
        if Task.isCancelled { return CancellationError() }
        return timedOut(request, deadline: deadline, isOwn: isOwn, tracking: tracking, after: error)
    }

    /// The race around any operation: what a ``Request/timeout`` runs around the client's whole chain.
    static func run<C: Clock<Duration>>(
        _ duration: Duration,
        clock: C,
        request: URLRequest,
        operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        let now = clock.now
        let (deadline, isOwn, wait) = deadline(after: duration, from: now, on: clock)
        return try await race(
            deadline,
            isOwn: isOwn,
            tracking: .here(),
            wait: wait,
            from: now,
            on: clock,
            request: request,
            operation
        )
    }

    /// The race of `operation` against a deadline in real time that someone else set (a transport bounding the
    /// part of its work its client does not bound); the error reports that deadline's timeout.
    static func run(
        until deadline: Deadline,
        request: URLRequest,
        operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        let clock = ContinuousClock()
        let now = clock.now
        return try await race(
            deadline,
            isOwn: false,
            tracking: CallTracking(record: CallRecord.current, isNew: false),
            wait: deadline.timeLeft,
            from: now,
            on: clock,
            request: request,
            operation
        )
    }

    /// The race of `operation` against `deadline`, enforced by the timer that armed the deadline's work (see
    /// `Deadline.work`): `operation` runs in a child task that starts at once and attaches to the work, and the
    /// timer cancels it at the deadline. No timer of its own, so a body that is still arriving costs a child
    /// task and two short critical sections. When the deadline has no such work, or another task holds it (two
    /// attempts at once under one deadline), it is `run(until:request:operation:)`'s race.
    static func run(
        attachedTo deadline: Deadline,
        request: URLRequest,
        operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        guard let work = deadline.work, let owner = work.owner else {
            return try await run(until: deadline, request: request, operation: operation)
        }
        let read = AttachedRead()
        do {
            // A discarding group: the one child hands its outcome over in `read`, so the group keeps no result
            // queue of its own.
            try await withThrowingDiscardingTaskGroup { group in
                startImmediately(
                    {
                        guard owner.attach(work) else {
                            read.outcome = .notAttached
                            return
                        }
                        do {
                            let (data, response) = try await operation(request)
                            await owner.detach(work)
                            read.outcome = .response(data, response)
                        } catch {
                            await owner.detach(work)
                            throw error
                        }
                    },
                    in: &group
                )
            }
        } catch {
            let tracking = CallTracking(record: CallRecord.current, isNew: false)
            guard work.didFire else {
                throw failure(error, request: request, deadline: deadline, isOwn: false, tracking: tracking)
            }
            // The caller's own cancellation wins over a deadline that passed at the same time.
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: false, tracking: tracking, after: error)
        }
        switch read.outcome {
        case .response(let data, let response)?:
            return (data, response)
        case .notAttached?:
            return try await run(until: deadline, request: request, operation: operation)
        case nil:
            preconditionFailure("the deadline's child task ended without an outcome or an error")
        }
    }

    /// What the child of `run(attachedTo:request:operation:)` leaves in its ``AttachedRead``.
    private enum Attached: Sendable {
        case response(Data, HTTPURLResponse)
        case notAttached
    }

    /// Where the child of `run(attachedTo:request:operation:)` leaves its outcome: written by the child before it
    /// ends, read once its group is done (which orders the two).
    private final class AttachedRead: @unchecked Sendable {
        // @unchecked Sendable: the child writes `outcome` before it ends; the caller reads it after the group.
        var outcome: Attached?
    }

    /// Runs `operation` under `deadline`, in a child task cancelled when `wait` from `now` has passed on `clock`.
    private static func race<C: Clock<Duration>>(
        _ deadline: Deadline,
        isOwn: Bool,
        tracking: CallTracking,
        wait: Duration,
        from now: C.Instant,
        on clock: C,
        request: URLRequest,
        _ operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        guard wait > .zero else {
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: isOwn, tracking: tracking)
        }
        let fireAt = now.advanced(by: wait)
        let finished = Finished()
        // Marked as fired before the work is cancelled at the deadline (see `Deadline.passedAbove`).
        let fired = DeadlineWork()
        let bound = deadline.enforcedAbove(by: fired)
        let work: @Sendable () async throws -> Outcome = {
            defer { finished.set() }
            let (data, response) = try await tracking.run(under: bound) {
                try await operation(request)
            }
            return .response(data, response)
        }
        let outcome: Outcome
        do {
            outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
                defer { group.cancelAll() }
                startImmediately(work, in: &group)
                if !finished.isSet {
                    startImmediately(
                        {
                            try await clock.sleep(until: fireAt, tolerance: nil)
                            fired.markFired()
                            return .deadlinePassed
                        },
                        in: &group
                    )
                }
                // The first child to finish decides; the other is cancelled and awaited when the group ends.
                guard let first = try await group.next() else {
                    preconditionFailure("the timeout's task group has no children")
                }
                return first
            }
        } catch {
            throw failure(error, request: request, deadline: deadline, isOwn: isOwn, tracking: tracking)
        }
        switch outcome {
        case .response(let data, let response):
            return (data, response)
        case .deadlinePassed:
            // The caller's own cancellation wins over a deadline that passed at the same time.
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: isOwn, tracking: tracking)
        }
    }

    /// The race, with the deadline enforced by `timer` (one driver task per middleware) rather than by a timer
    /// child per request; see ``DeadlineTimer``.
    ///
    /// A timeout whose enclosing deadline is nearer than its own goes the per-request way: its deadline is
    /// out of order with the timer's queue.
    static func run(
        _ duration: Duration,
        timer: DeadlineTimer<ContinuousClock>,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        // Inlined here, so that the default clock's path is specialized: from generic code the runner would
        // look up metadata and handle its enums through the runtime on every request.
        try await runOnTimer(duration, timer: timer, request: request, next: next)
    }

    /// The same, for any clock (tests drive it with a `ManualClock`).
    static func run<C: Clock<Duration>>(
        _ duration: Duration,
        timer: DeadlineTimer<C>,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        try await runOnTimer(duration, timer: timer, request: request, next: next)
    }

    @inline(__always)
    private static func runOnTimer<C: Clock<Duration>>(
        _ duration: Duration,
        timer: DeadlineTimer<C>,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        if let outer = Deadline.current, outer.timeLeft < duration {
            return try await run(duration, clock: timer.clock, request: request, next: next)
        }
        let fireAt = timer.clock.now.advanced(by: duration)
        // Made as the child task below is bound to it (``Deadline/enforcedAbove``); the transport-enforced path
        // makes its own, with the work it arms.
        let deadline = Deadline(at: fireAt, on: timer.clock, timeout: duration, work: .enforcedAbove)
        let tracking = CallTracking.here()
        if next.transportEnforces(deadline) {
            // The deadline goes down with work armed in the timer now, in deadline order, and no task: the
            // transport attaches the task that reads a body to it (a body read is the one wait the network
            // library does not bound), so the timer's driver cancels the read instead of a timer of its own.
            let work = DeadlineWork(owner: timer)
            timer.arm(work, at: fireAt)
            // A task spawned under the deadline may still be attached: it stays bounded by it (see `release`).
            defer { timer.release(work) }
            return try await runEnforcedByTransport(
                Deadline(at: fireAt, on: timer.clock, timeout: duration, work: work),
                isOwn: true,
                tracking: tracking,
                request: request,
                next: next
            )
        }
        let work = DeadlineWork()
        // The child's deadline names its work, which the driver marks as fired before it cancels the child (see
        // `Deadline.passedAbove`).
        let bound = deadline.enforcedAbove(by: work)
        // Armed before the chain starts, as its deadline was just read: armed once the child first suspends, a
        // chain that works a while before that (signing a large body, say) let later deadlines into the queue
        // ahead of its own, and the driver, which only looks at the head, cancelled it late
        // (`DeadlineTimerTests.deadlineArmedBeforeTheChain`).
        timer.arm(work, at: fireAt)
        do {
            // A discarding group: the one child hands its response over in `work`, so the group keeps no result
            // queue of its own.
            try await withThrowingDiscardingTaskGroup { group in
                startImmediately(
                    {
                        timer.begin(work)
                        do {
                            work.response = try await tracking.run(under: bound) { try await next(request) }
                            if !timer.tryEnd(work) { await timer.endAfterCancellation(work) }
                        } catch {
                            if !timer.tryEnd(work) { await timer.endAfterCancellation(work) }
                            throw error
                        }
                    },
                    in: &group
                )
            }
        } catch {
            guard !work.didFire else {
                // The caller's own cancellation wins over a deadline that passed at the same time.
                try Task.checkCancellation()
                throw timedOut(request, deadline: deadline, isOwn: true, tracking: tracking, after: error)
            }
            throw failure(error, request: request, deadline: deadline, isOwn: true, tracking: tracking)
        }
        // Taken out of the work, which may wait in the timer's queue behind a request still in flight.
        guard let response = work.takeResponse() else {
            preconditionFailure("the timeout's child task ended without a response or an error")
        }
        // A response that came back after the deadline was passed is not the caller's any more.
        if work.didFire {
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: true, tracking: tracking)
        }
        return response
    }

    /// Starts `operation` as a child task of a discarding group, as the other `startImmediately` does.
    private static func startImmediately(
        _ operation: @escaping @Sendable () async throws -> Void,
        in group: inout ThrowingDiscardingTaskGroup<any Error>
    ) {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
            group.addImmediateTask(operation: operation)
        } else {
            group.addTask(operation: operation)
        }
    }

    /// Starts `operation` as a child task that runs synchronously until it first suspends, where the
    /// platform has immediate tasks; as an ordinary child task elsewhere.
    private static func startImmediately<Value: Sendable>(
        _ operation: @escaping @Sendable () async throws -> Value,
        in group: inout ThrowingTaskGroup<Value, any Error>
    ) {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
            group.addImmediateTask(operation: operation)
        } else {
            group.addTask(operation: operation)
        }
    }

    /// The error of a timeout whose deadline passed: which timeout it was (an attempt's, when this timeout is
    /// inside a retry and the deadline is its own; else the whole call's), how long what it bounds ran, and, for
    /// the whole call, how many attempts the call made (counted in the call's record, or told by the error the
    /// call ended with: `failure`, a retry's last attempt that timed out).
    private static func timedOut(
        _ request: URLRequest,
        deadline: Deadline,
        isOwn: Bool,
        tracking: CallTracking,
        after error: (any Error)? = nil
    ) -> CourierError {
        let scope: CourierError.TimeoutScope = isOwn && RetryContext.current != nil ? .attempt : .call
        let message =
            !isOwn
            ? "the call's deadline passed (an enclosing timeout of \(deadline.timeout))"
            : scope == .attempt
                ? "the per-attempt timeout of \(deadline.timeout) passed"
                : "the whole-call timeout of \(deadline.timeout) passed"
        var timedOut = CourierError(.timedOut, message: message, request: request)
        timedOut.timeout = deadline.timeout
        timedOut.timeoutScope = scope
        // The deadline's timeout less the time left (zero or below now): how long since it was set.
        timedOut.elapsed = deadline.timeout - deadline.timeLeft
        if scope == .call {
            let told = (error as? CourierError)?.attempts
            let counted = tracking.record?.attempts
            timedOut.attempts = max(told ?? counted ?? 1, counted ?? 1)
        }
        return timedOut
    }
}

/// The record of the call a timeout is part of (see `CallRecord`), for the attempts its error tells: the one a
/// layer above keeps, or one of its own when it is the whole call's timeout (no record above, and not inside a
/// retry), which it binds for the layers below.
struct CallTracking: Sendable {
    let record: CallRecord?
    let isNew: Bool

    /// The tracking for a timeout that starts now, in the current task.
    @inline(__always)
    static func here() -> CallTracking {
        if let record = CallRecord.current { return CallTracking(record: record, isNew: false) }
        // Inside a retry, the retry tells the story of the call; this timeout's error is one attempt's.
        if RetryContext.current != nil { return CallTracking(record: nil, isNew: false) }
        return CallTracking(record: CallRecord(parent: nil), isNew: true)
    }

    /// Runs `body` with `deadline` (and the record, when it is new) bound for the layers below.
    @inline(__always)
    func run(
        under deadline: Deadline,
        _ body: () async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        guard isNew, let record else {
            return try await Deadline.$current.withValue(deadline) { try await body() }
        }
        return try await Deadline.$current.withValue(deadline) {
            try await CallRecord.$current.withValue(record) { try await body() }
        }
    }
}

extension Deadline {
    /// The deadline of a timeout above that has cancelled the current task because it passed, or `nil`: a layer
    /// below then reads the cancellation as the timeout it is, as it would read a transport's error at the deadline
    /// when the transport enforces it (see ``passedError(for:)``), whatever the layers between.
    static var passedAbove: Deadline? {
        // Fired, not only passed: a caller that went away just before the deadline, whose unwinding ends after
        // it, is a cancellation.
        guard let deadline = current, deadline.isEnforcedAbove, deadline.work?.didFire == true else { return nil }
        return deadline
    }

    /// Whether `error` ended a request because its caller went away: a cancellation that no timeout above made at
    /// its deadline. The one rule of the layers that tell cancellations from failures (counting, tracing).
    static func isCallerCancellation(_ error: any Error) -> Bool {
        (error is CancellationError || Task.isCancelled) && passedAbove == nil
    }

    /// `error` as a layer below a timeout reports it: a cancellation by a timeout above whose deadline passed is that
    /// timeout's error; anything else is unchanged.
    static func seenBelow(_ error: any Error, request: URLRequest) -> any Error {
        guard error is CancellationError, let deadline = passedAbove else { return error }
        return deadline.passedError(for: request)
    }

    /// The error of a call whose deadline passed while (or before) a transport that enforces it was waiting: the
    /// one the timeout middleware that set the deadline reports, whichever of the two notices first.
    func passedError(for request: URLRequest) -> CourierError {
        var error = CourierError(
            .timedOut,
            message: "the call's deadline passed (a timeout of \(timeout))",
            request: request
        )
        error.timeout = timeout
        return error
    }
}
