import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Paces requests by the rate limits servers announce; the state behind ``Middleware/rateLimiting(_:)``.
///
/// ```swift
/// let limiter = RateLimiter(RateLimitPolicy(maximumWait: .seconds(30)))
/// let client = Client(baseURL: base, middleware: [.retry(.default), .rateLimiting(limiter)])
/// // later: limiter.state(for: "api.example.com:443")?.remaining
/// ```
///
/// It reads the IETF `RateLimit` and `RateLimit-Policy` fields (and the earlier drafts' forms), the common
/// `X-RateLimit-Limit`, `-Remaining` and `-Reset`, and `Retry-After` on `429` and `503`. Each request sent
/// takes a slot from the partition's quota at once, so requests in flight count before their responses come
/// back; each response brings the quota in line with the server's numbers. When no slot is left, requests
/// wait for the next window in FIFO order instead of being sent into a `429`. The first request to a
/// partition, when nothing is known, goes alone as a probe; the others wait for its response (or use
/// ``RateLimitPolicy/clientLimit`` from the start).
///
/// A waiting request:
/// - fails at once with ``CourierError/Code/timedOut`` when its slot opens at or after the call's deadline
///   (``Deadline/current``), and never waits past it;
/// - fails with ``CourierError/Code/rateLimited`` when the partition's queue is full or the wait would be
///   longer than ``RateLimitPolicy/maximumWait``;
/// - leaves the queue at once with `CancellationError` when its task is cancelled.
///
/// The limiter never sends a request itself, and never sends one twice: a `429` updates its state and goes
/// back to the layers above, where a retry may send it again (and then waits for the window here).
///
/// Time comes from an injected clock (`ContinuousClock` by default; a manual clock in tests). The state of
/// each partition is a value-type state machine under one lock; waiters are woken by one timer task per
/// window, not per request. What servers said is also written to a ``RateLimitStore``, which replicas may
/// share.
public final class RateLimiter: Sendable {
    typealias Machine = RateLimitStateMachine<Waiter>

    /// A suspended request.
    struct Waiter {
        let continuation: CheckedContinuation<Machine.Ticket, any Error>
        let request: URLRequest
        let timeout: Duration?
    }

    /// What an admitted request holds until it ends.
    struct Lease: Sendable {
        let partition: String
        let ticket: Machine.Ticket
    }

    /// What the limiter knows of one partition now.
    public struct PartitionState: Sendable, Hashable {
        /// Requests allowed per window, when known.
        public var limit: Int?
        /// Requests that may still be sent in this window, or `nil` when nothing is known or the partition
        /// is not limited.
        public var remaining: Int?
        /// The time until the window resets, when known.
        public var resetIn: Duration?
        /// Requests waiting for a slot.
        public var waiting: Int
        /// Requests sent whose response has not come back.
        public var inFlight: Int
        /// Whether the server sent no rate-limit fields, so nothing is paced.
        public var isUnlimited: Bool
    }

    /// The policy.
    public let policy: RateLimitPolicy

    private let store: any RateLimitStore
    private let settings: Machine.Settings
    private let elapsed: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void
    private let partitions = LockedState<[String: Machine]>([:])

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - policy: How to pace.
    ///   - store: Where what servers said is kept; ``InMemoryRateLimitStore`` by default.
    ///   - clock: The clock windows and waits are measured on; `ContinuousClock` by default.
    public init<C: Clock<Duration>>(
        _ policy: RateLimitPolicy = RateLimitPolicy(),
        store: any RateLimitStore = InMemoryRateLimitStore(),
        clock: C = ContinuousClock()
    ) {
        self.policy = policy
        self.store = store
        self.settings = Machine.Settings(
            maximumQueueLength: policy.maximumQueueLength,
            maximumWait: policy.maximumWait,
            clientLimit: policy.clientLimit?.maxRequests,
            clientWindow: policy.clientLimit?.window,
            fallbackDelay: policy.fallbackDelay
        )
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.sleepUntil = { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
    }

    /// What the limiter knows of `partition` (a key ``RateLimitPolicy/partition`` returned, by default
    /// `host:port`), or `nil` for a partition never used.
    public func state(for partition: String) -> PartitionState? {
        let now = elapsed()
        return partitions.withLock { partitions in
            partitions[partition].map { machine in
                PartitionState(
                    limit: machine.limit,
                    remaining: machine.isUnlimited ? nil : machine.remaining,
                    resetIn: machine.resetAt.map { $0 - now },
                    waiting: machine.waiterCount,
                    inFlight: machine.inFlight,
                    isUnlimited: machine.isUnlimited
                )
            }
        }
    }

    // MARK: Used by the middleware

    /// Waits for a slot for `request`, or throws.
    func acquire(_ request: URLRequest) async throws -> Lease {
        let partition = policy.partition(request)
        let deadline = Deadline.current
        let start = elapsed()
        let deadlineOffset = deadline.map { start + $0.timeLeft }
        var action = partitions.withLock { $0[partition]?.acquire(now: start, deadline: deadlineOffset) }
        if action == nil {
            // First use of the partition in this process: start from what another replica stored, if anything.
            let stored = try? await store.quota(for: partition)
            let now = elapsed()
            let seed = stored.flatMap { quota(from: $0, now: now) }
            action = partitions.withLock { partitions in
                if partitions[partition] == nil {
                    var machine = Machine(settings: settings)
                    if let seed { machine.seed(seed, now: now) }
                    partitions[partition] = machine
                }
                return partitions[partition]!.acquire(now: now, deadline: deadlineOffset)
            }
        }
        switch action! {
        case .send(let ticket):
            return Lease(partition: partition, ticket: ticket)
        case .reject(let rejection):
            policy.onEvent?(.rejected(partition: partition, reason: Self.reason(rejection)))
            throw Self.error(rejection, request: request, timeout: deadline?.timeout)
        case .suspend(let id):
            let ticket = try await CallRecord.measuring(.slot) {
                try await wait(
                    id: id,
                    partition: partition,
                    request: request,
                    deadline: deadlineOffset,
                    timeout: deadline?.timeout
                )
            }
            let lease = Lease(partition: partition, ticket: ticket)
            if Task.isCancelled {
                // Handed a slot just as the task was cancelled: give it back unused.
                returnUnused(lease)
                throw CancellationError()
            }
            policy.onEvent?(.waited(partition: partition, duration: elapsed() - start))
            return lease
        }
    }

    private func wait(
        id: Int,
        partition: String,
        request: URLRequest,
        deadline: Duration?,
        timeout: Duration?
    ) async throws -> Machine.Ticket {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Machine.Ticket, any Error>) in
                let waiter = Waiter(continuation: continuation, request: request, timeout: timeout)
                let now = elapsed()
                // Task.isCancelled is read under the lock: a cancellation either happened before (seen here) or
                // its handler runs after this section and finds the waiter in the queue.
                let action = partitions.withLock { partitions in
                    partitions[partition]!.enqueue(
                        waiter,
                        id: id,
                        now: now,
                        deadline: deadline,
                        isCancelled: Task.isCancelled
                    )
                }
                switch action {
                case .send(let ticket):
                    continuation.resume(returning: ticket)
                case .waiting(let tick):
                    if let tick { schedule(tick, for: partition) }
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .reject(let rejection):
                    policy.onEvent?(.rejected(partition: partition, reason: Self.reason(rejection)))
                    continuation.resume(throwing: Self.error(rejection, request: request, timeout: timeout))
                }
            }
        } onCancel: {
            partitions.withLock { $0[partition]?.cancel(id: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Records how an admitted request ended: with `response`, or without one (an error, a cancellation).
    func complete(_ lease: Lease, response: HTTPURLResponse?) async {
        let observation = response.map { RateLimitHeaders.observe($0, now: policy.currentDate()) }
        let now = elapsed()
        let output = partitions.withLock {
            $0[lease.partition]!.complete(lease.ticket, observation: observation, now: now)
        }
        if let response, let observation, observation.isThrottled {
            policy.onEvent?(
                .throttled(partition: lease.partition, status: response.statusCode, retryAfter: observation.retryAfter)
            )
        }
        carryOut(output, for: lease.partition)
        if let updated = output.updated {
            policy.onEvent?(
                .updated(
                    partition: lease.partition,
                    limit: updated.limit,
                    remaining: updated.remaining,
                    resetIn: updated.resetAt.map { $0 - now }
                )
            )
            let stored = RateLimitQuota(
                limit: updated.limit,
                remaining: updated.remaining,
                resetsAt: updated.resetAt.map { policy.currentDate().addingTimeInterval(($0 - now).timeInterval) },
                window: updated.window
            )
            try? await store.record(stored, for: lease.partition)
        }
    }

    /// Gives back the slot of a request that was never sent.
    func returnUnused(_ lease: Lease) {
        let now = elapsed()
        let output = partitions.withLock { $0[lease.partition]!.returnUnused(lease.ticket, now: now) }
        carryOut(output, for: lease.partition)
    }

    private func tick(_ partition: String) {
        let now = elapsed()
        guard let output = partitions.withLock({ $0[partition]?.tick(now: now) }) else { return }
        carryOut(output, for: partition)
    }

    private func carryOut(_ output: Machine.Output, for partition: String) {
        for (waiter, ticket, _) in output.sends {
            waiter.continuation.resume(returning: ticket)
        }
        for (waiter, rejection) in output.rejections {
            policy.onEvent?(.rejected(partition: partition, reason: Self.reason(rejection)))
            waiter.continuation.resume(
                throwing: Self.error(rejection, request: waiter.request, timeout: waiter.timeout)
            )
        }
        if let tick = output.scheduleTick { schedule(tick, for: partition) }
    }

    /// Wakes the partition at `offset`: one task per window (or deadline), not per request. The task holds
    /// the limiter weakly, so a limiter no longer used is freed without waiting for it.
    private func schedule(_ offset: Duration, for partition: String) {
        let sleepUntil = self.sleepUntil
        Task.detached { [weak self] in
            try? await sleepUntil(offset)
            self?.tick(partition)
        }
    }

    /// The quota `stored` describes, on this limiter's clock. A store may be shared and its entries decoded from
    /// anywhere, so its numbers are clamped like a server's (``NetworkNumber``).
    private func quota(from stored: RateLimitQuota, now: Duration) -> Machine.Quota? {
        guard let resetsAt = stored.resetsAt else { return nil }
        let resetIn = resetsAt.timeIntervalSince(policy.currentDate())
        let count = { (value: Int) in min(max(value, 0), NetworkNumber.int(NetworkNumber.maximumCount)) }
        return Machine.Quota(
            limit: stored.limit.map(count),
            remaining: count(stored.remaining),
            resetAt: now + NetworkNumber.duration(seconds: resetIn),
            window: stored.window.map { min(max($0, .zero), .seconds(NetworkNumber.maximumSeconds)) }
        )
    }

    private static func reason(_ rejection: Machine.Rejection) -> RateLimitEvent.Reason {
        switch rejection {
        case .queueFull: .queueFull
        case .waitTooLong: .waitTooLong
        case .pastDeadline: .deadline
        }
    }

    static func error(_ rejection: Machine.Rejection, request: URLRequest, timeout: Duration?) -> CourierError {
        switch rejection {
        case .queueFull(let maximum):
            return CourierError(
                .rateLimited,
                message: "\(maximum) requests already wait for the rate limit's next window",
                request: request
            )
        case .waitTooLong(let opensIn, let maximum):
            let when = opensIn.map { "opens in \($0)" } ?? "did not open"
            return CourierError(
                .rateLimited,
                message: "the rate limit's next slot \(when), past the maximum wait of \(maximum)",
                request: request
            )
        case .pastDeadline(let opensIn):
            let when = opensIn.map { "opens in \($0), " } ?? ""
            var error = CourierError(
                .timedOut,
                message: "the rate limit's next slot \(when)after the call's deadline",
                request: request
            )
            error.timeout = timeout
            return error
        }
    }
}
