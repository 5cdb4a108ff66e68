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
