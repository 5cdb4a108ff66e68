import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Fails a call that takes longer than `duration`, cancelling the work still in flight.
    ///
    /// ```swift
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [
    ///         .timeout(.seconds(10)),              // the whole call, retries included
    ///         .retry(.default),
    ///         .timeout(.seconds(2)),               // each attempt
    ///         .validatingStatus(),
    ///     ]
    /// )
    /// ```
    ///
    /// The rest of the chain runs as a child task. When the deadline comes first, the child task is
    /// cancelled (the transport sees the cancellation and stops), and the call throws a ``CourierError``
    /// with code ``CourierError/Code/timedOut`` and ``CourierError/timeout`` set to the duration. Because the
    /// work is structured, the error is thrown once the cancelled work has ended: a transport that ignores
    /// cancellation delays it. A response that arrives before the deadline is returned as it is. If the
    /// caller's task is cancelled, the call throws `CancellationError`, not a timeout.
    ///
    /// **Deadlines.** The outermost timeout sets ``Deadline/current`` for the layers below it. An inner
    /// timeout waits for the smaller of its own duration and the time left; when the outer deadline is the
    /// nearer one, the error reports the outer timeout's duration. ``Middleware/retry(_:clock:)`` never
    /// sleeps past the deadline.
    ///
    /// **Placement.** Outside ``Middleware/retry(_:clock:)`` a timeout bounds the whole call, backoff
    /// included; inside it, each attempt (a per-attempt timeout is retryable). See <doc:Resilience>.
    ///
    /// **Cost.** The work starts at once in the caller's thread (an immediate child task, on platforms that
    /// have it); a timer is armed only if the work suspends. A call that completes without suspending (an
    /// in-memory transport, a cache) pays for one child task and no timer.
    ///
    /// The timeout never relies on `URLRequest.timeoutInterval`, which is truncated to whole seconds on
    /// Linux.
    ///
    /// - Parameters:
    ///   - duration: The longest the rest of the chain may take; must be greater than zero.
    ///   - clock: The clock that measures it; `ContinuousClock` by default, a `ManualClock` in tests.
    /// - Returns: The middleware, named `"timeout"`.
    public static func timeout<C: Clock<Duration>>(
        _ duration: Duration,
        clock: C = ContinuousClock()
    ) -> Middleware {
        precondition(duration > .zero, "a timeout must be longer than zero (got \(duration))")
        return Middleware(name: "timeout") { request, next in
            try await TimeoutRunner.run(duration, clock: clock, request: request, next: next)
        }
    }
}

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
