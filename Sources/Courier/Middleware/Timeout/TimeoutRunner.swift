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
    /// suspending. Relaxed ordering is enough: a stale `false` only arms a timer that was not needed.
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
        let deadline: Deadline
        let wait: Duration
        let isOwn: Bool
        if let outer = Deadline.current, case let left = outer.timeLeft, left < duration {
            // An enclosing deadline is nearer: wait for it, and report its timeout when it passes.
            deadline = outer
            wait = left
            isOwn = false
        } else {
            deadline = Deadline(at: now.advanced(by: duration), on: clock, timeout: duration)
            wait = duration
            isOwn = true
        }
        guard wait > .zero else {
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: isOwn)
        }
        let fireAt = now.advanced(by: wait)
        let finished = Finished()
        let work: @Sendable () async throws -> Outcome = {
            defer { finished.set() }
            let (data, response) = try await Deadline.$current.withValue(deadline) {
                try await next(request)
            }
            return .response(data, response)
        }
        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            defer { group.cancelAll() }
            startImmediately(work, in: &group)
            if !finished.isSet {
                startImmediately(
                    {
                        try await clock.sleep(until: fireAt, tolerance: nil)
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
        switch outcome {
        case .response(let data, let response):
            return (data, response)
        case .deadlinePassed:
            // The caller's own cancellation wins over a deadline that passed at the same time.
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: isOwn)
        }
    }

    /// The race, with the deadline enforced by `timer` (one driver task per middleware) rather than by a timer
    /// child per request; see ``DeadlineTimer``.
    ///
    /// A timeout whose enclosing deadline is nearer than its own goes the per-request way: its deadline is
    /// out of order with the timer's queue.
    static func run<C: Clock<Duration>>(
        _ duration: Duration,
        timer: DeadlineTimer<C>,
        request: URLRequest,
        next: Next
    ) async throws -> (Data, HTTPURLResponse) {
        if let outer = Deadline.current, outer.timeLeft < duration {
            return try await run(duration, clock: timer.clock, request: request, next: next)
        }
        let fireAt = timer.clock.now.advanced(by: duration)
        let deadline = Deadline(at: fireAt, on: timer.clock, timeout: duration)
        let work = DeadlineTimer<C>.Work()
        let (result, didFire) = await withTaskGroup(of: WorkResult.self) { group in
            startImmediately(
                {
                    timer.begin(work)
                    let result: Result<(Data, HTTPURLResponse), any Error>
                    do {
                        result = .success(try await Deadline.$current.withValue(deadline) { try await next(request) })
                    } catch {
                        result = .failure(error)
                    }
                    return WorkResult(result: result, didFire: await timer.end(work))
                },
                in: &group
            )
            timer.arm(work, at: fireAt)
            guard let first = await group.next() else {
                preconditionFailure("the timeout's task group has no children")
            }
            return (first.result, first.didFire)
        }
        if didFire {
            // The caller's own cancellation wins over a deadline that passed at the same time.
            try Task.checkCancellation()
            throw timedOut(request, deadline: deadline, isOwn: true)
        }
        return try result.get()
    }

    private struct WorkResult: Sendable {
        let result: Result<(Data, HTTPURLResponse), any Error>
        let didFire: Bool
    }

    /// Starts `operation` as a child task that runs synchronously until it first suspends, where the
    /// platform has immediate tasks; as an ordinary child task elsewhere.
    private static func startImmediately(
        _ operation: @escaping @Sendable () async throws -> Outcome,
        in group: inout ThrowingTaskGroup<Outcome, any Error>
    ) {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
            group.addImmediateTask(operation: operation)
        } else {
            group.addTask(operation: operation)
        }
    }

    private static func startImmediately(
        _ operation: @escaping @Sendable () async -> WorkResult,
        in group: inout TaskGroup<WorkResult>
    ) {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
            group.addImmediateTask(operation: operation)
        } else {
            group.addTask(operation: operation)
        }
    }

    private static func timedOut(_ request: URLRequest, deadline: Deadline, isOwn: Bool) -> CourierError {
        let message =
            isOwn
            ? "no response within the timeout of \(deadline.timeout)"
            : "the call's deadline passed (an enclosing timeout of \(deadline.timeout))"
        var error = CourierError(.timedOut, message: message, request: request)
        error.timeout = deadline.timeout
        return error
    }
}
