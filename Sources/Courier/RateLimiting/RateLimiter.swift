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
        /// The partition's machine, reached again without a lookup.
        let slot: Slot
        let ticket: Machine.Ticket
    }

    /// A value kept out of line, read and changed only under the limiter's lock (hence `@unchecked`): a class's
    /// stored property would pay a run-time exclusivity check on each access, and a value in `LockedState` one on
    /// each `withLock`.
    final class Guarded<Value>: @unchecked Sendable {
        private let storage: UnsafeMutablePointer<Value>

        init(_ value: Value) {
            storage = .allocate(capacity: 1)
            storage.initialize(to: value)
        }

        deinit {
            storage.deinitialize(count: 1)
            storage.deallocate()
        }

        /// The value; only under the limiter's lock.
        var value: Value {
            _read { yield storage.pointee }
            _modify { yield &storage.pointee }
        }
    }

    /// One partition's machine, in a box so that a lease reaches it again without hashing its key.
    typealias Slot = Guarded<Machine>

    /// What the limiter's lock guards itself: nothing anyone reads, but not an empty value. With a `LockedState(())`
    /// the thread sanitizer reported races between the lock's own critical sections (13 reports in one sanitized
    /// run of the suite, none since); every other lock in Courier guards a stored value.
    struct LockToken {
        var unused = 0
    }

    /// The partitions by key, and the last one looked up: most clients send to one host, and comparing two keys
    /// costs less than hashing one, or, with the host partition, comparing a URL's origin less than keying it.
    struct Partitions {
        /// By bytes (``ExactString``): partition keys that differ in bytes (two tenants) never share a quota.
        var slots: [ExactString: Slot] = [:]
        /// The last partition looked up.
        var lastKey = ""
        var lastSlot: Slot?
        /// The origin (`scheme://host[:port]`) of the URL `lastKey` was keyed from with ``HostKey/plain(_:)``, or
        /// `""`.
        var lastOrigin = ""
        /// Past this many partitions, adding one first forgets those that hold nothing (``add(_:for:now:)``).
        var sweepAt = Partitions.minimumSweep

        /// The fewest partitions a sweep waits for.
        static let minimumSweep = 1_024

        /// Adds `slot` under `key` (one never used before, or forgotten); past ``sweepAt`` partitions, forgets
        /// first those that hold nothing at `now`. A limiter keyed by tenant or by host then holds the partitions
        /// in use, not every one it ever saw; the sweep's cost is spread over the additions since the last one.
        mutating func add(_ slot: Slot, for key: String, now: Duration) {
            slots[ExactString(key)] = slot
            guard slots.count > sweepAt else { return }
            slots = slots.filter { $0.value === slot || !$0.value.value.holdsNothing(now: now) }
            if let kept = lastSlot, slots[ExactString(lastKey)] !== kept {
                (lastKey, lastSlot, lastOrigin) = ("", nil, "")
            }
            sweepAt = max(Partitions.minimumSweep, slots.count * 2)
        }

        /// The slot of `key`, if the partition was used before; `origin` is that of the URL keyed `key`, if any.
        mutating func slot(_ key: String, origin: String = "") -> Slot? {
            if let lastSlot, lastKey.hasSameBytes(as: key) {
                if !origin.isEmpty { lastOrigin = origin }
                return lastSlot
            }
            guard let slot = slots[ExactString(key)] else { return nil }
            (lastKey, lastSlot, lastOrigin) = (key, slot, origin)
            return slot
        }

        /// The last slot, when the URL whose absolute string is `text` has the origin `lastKey` was keyed from.
        func lastSlot(matching text: String) -> Slot? {
            guard !lastOrigin.isEmpty, HostKey.hasOrigin(text, lastOrigin) else { return nil }
            return lastSlot
        }
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
    /// The store when it is the default in-memory one, which is read and written at once (decided once here,
    /// not by a cast on each response).
    private let inMemoryStore: InMemoryRateLimitStore?
    /// Sleeps for a duration on the limiter's clock: the bound of each call to a store other than in memory.
    private let sleepFor: @Sendable (Duration) async throws -> Void
    /// The fleet's quota, when the policy has a ``RateLimitPolicy/sharedLimit``.
    let shared: SharedQuota?
    /// Writes quotas to a store other than the in-memory one.
    private let writer: StoreWriter
    private let settings: Machine.Settings
    private let elapsed: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void
    /// Guards `partitions` and every slot's machine.
    private let lock = LockedState(LockToken())
    private let partitions = Guarded(Partitions())

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
        let elapsed = { @Sendable in start.duration(to: clock.now) }
        let sleepUntil = { @Sendable (offset: Duration) in
            try await clock.sleep(until: start.advanced(by: offset), tolerance: nil)
        }
        let sleepFor = { @Sendable (duration: Duration) in try await sleepUntil(elapsed() + duration) }
        self.elapsed = elapsed
        self.sleepUntil = sleepUntil
        self.sleepFor = sleepFor
        self.inMemoryStore = store as? InMemoryRateLimitStore
        self.writer = StoreWriter(store: store, timeout: policy.storeTimeout, sleep: sleepFor)
        self.shared = policy.sharedLimit.map { limit in
            SharedQuota(
                limit,
                store: store,
                policy: policy,
                elapsed: elapsed,
                sleepUntil: sleepUntil,
                sleepFor: sleepFor
            )
        }
    }

    /// How many partitions the limiter holds now.
    var partitionCount: Int { lock.withLock { _ in partitions.value.slots.count } }

    /// What the limiter knows of `partition` (a key ``RateLimitPolicy/partition`` returned, by default
    /// `host:port`), or `nil` for a partition never used (or forgotten: see ``RateLimitPolicy/partition``).
    public func state(for partition: String) -> PartitionState? {
        let now = elapsed()
        return lock.withLock { _ in
            partitions.value.slots[ExactString(partition)].map(\.value).map { machine in
                // A hold (a refusal without numbers under a client-side limit): nothing goes until it ends.
                let held = machine.heldUntil.flatMap { $0 > now ? $0 : nil }
                return PartitionState(
                    limit: machine.limit,
                    remaining: held != nil ? 0 : machine.isUnlimited ? nil : machine.remaining,
                    resetIn: (held ?? machine.resetAt).map { $0 - now },
                    waiting: machine.waiterCount,
                    inFlight: machine.inFlight,
                    isUnlimited: machine.isUnlimited
                )
            }
        }
    }

    // MARK: Used by the middleware

    /// What ``admit(_:)`` decides for a request.
    enum Admission {
        /// The request may go at once.
        case lease(Lease)
        /// The request belongs to `partition`, where ``acquire(_:partition:)`` decides.
        case acquire(partition: String)
    }

    /// The lease of `request` when it may go at once without reading the clock (its partition is unlimited and
    /// nobody waits), or else its partition.
    ///
    /// With the host partition, a URL with the origin of the last one keyed gets its key without keying it again.
    func admit(_ request: URLRequest) -> Admission {
        guard policy.partitionsByHost, let url = request.url else {
            return admission(policy.partition(request), origin: "")
        }
        let text = url.absoluteString
        let last = lock.withLock { _ -> Admission? in
            guard let slot = partitions.value.lastSlot(matching: text) else { return nil }
            let partition = partitions.value.lastKey
            guard let ticket = slot.value.acquireUntimed() else { return .acquire(partition: partition) }
            return .lease(Lease(partition: partition, slot: slot, ticket: ticket))
        }
        if let last { return last }
        // What HostKey.of(url) does, keeping the origin.
        guard let plain = HostKey.plain(text) else { return admission(HostKey.foundationKey(url), origin: "") }
        return admission(plain.key, origin: String(decoding: text.utf8.prefix(plain.originLength), as: UTF8.self))
    }

    /// ``admit(_:)`` in `partition`, whose key came from a URL with `origin` (or `""`).
    private func admission(_ partition: String, origin: String) -> Admission {
        lock.withLock { _ in
            guard let slot = partitions.value.slot(partition, origin: origin), let ticket = slot.value.acquireUntimed()
            else { return .acquire(partition: partition) }
            return .lease(Lease(partition: partition, slot: slot, ticket: ticket))
        }
    }

    /// Waits for a slot for `request` in `partition`, or throws.
    ///
    /// `since` is when the request first reached the limiter, when that was earlier than now (it waited for a
    /// window of the fleet in between): ``RateLimitPolicy/maximumWait`` bounds the whole wait from then.
    func acquire(_ request: URLRequest, partition: String, since: Duration? = nil) async throws -> Lease {
        let deadline = Deadline.current
        let start = elapsed()
        let since = since ?? start
        let deadlineOffset = deadline.map { start + $0.timeLeft }
        var found = lock.withLock { _ in
            partitions.value.slot(partition).map { slot in
                (slot: slot, action: slot.value.acquire(now: start, since: since, deadline: deadlineOffset))
            }
        }
        if found == nil {
            // First use of the partition in this process: start from what another replica stored, if anything,
            // and never wait for a store that is slow or down longer than its timeout.
            let stored = await readQuota(partition)
            let now = elapsed()
            let seed = stored.flatMap { quota(from: $0, now: now) }
            found = lock.withLock { _ in
                let slot: Slot
                if let existing = partitions.value.slot(partition) {
                    slot = existing
                } else {
                    var machine = Machine(settings: settings)
                    if let seed { machine.seed(seed, now: now) }
                    slot = Slot(machine)
                    partitions.value.add(slot, for: partition, now: now)
                }
                return (slot: slot, action: slot.value.acquire(now: now, since: since, deadline: deadlineOffset))
            }
        }
        let (slot, action) = found!
        switch action {
        case .send(let ticket):
            return Lease(partition: partition, slot: slot, ticket: ticket)
        case .reject(let rejection):
            policy.onEvent?(.rejected(partition: partition, reason: Self.reason(rejection)))
            throw Self.error(rejection, request: request, timeout: deadline?.timeout)
        case .suspend(let id):
            let ticket = try await CallRecord.measuring(.slot) {
                try await wait(
                    id: id,
                    partition: partition,
                    slot: slot,
                    request: request,
                    since: since,
                    deadline: deadlineOffset,
                    timeout: deadline?.timeout
                )
            }
            let lease = Lease(partition: partition, slot: slot, ticket: ticket)
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
        slot: Slot,
        request: URLRequest,
        since: Duration,
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
                let action = lock.withLock { _ in
                    slot.value.enqueue(
                        waiter,
                        id: id,
                        now: now,
                        since: since,
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
            lock.withLock { _ in slot.value.cancel(id: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Records how an admitted request ended: with `response`, or without one (an error, a cancellation). Returns
    /// the quota to write to the store with ``record(_:for:)`` when the response changed it.
    func complete(_ lease: Lease, request: URLRequest, response: HTTPURLResponse?) -> RateLimitQuota? {
        var observation = response.map { RateLimitHeaders.observe($0, currentDate: policy.currentDate) }
        if let response, let said = observation, !said.isEmpty, !Self.isFrom(response, hostOf: request) {
            // A redirect inside took the request to another host: what that host says of its own limit is not the
            // partition's. The response counts as one that said nothing.
            observation = RateLimitObservation()
        }
        // An unlimited partition with nobody waiting needs no clock, and nothing changes that anyone is told of.
        if lock.withLock({ _ in lease.slot.value.completeUntimed(lease.ticket, observation: observation) }) {
            return nil
        }
        let now = elapsed()
        let output = lock.withLock { _ in
            lease.slot.value.complete(lease.ticket, observation: observation, now: now)
        }
        if let response, let observation, observation.isThrottled {
            policy.onEvent?(
                .throttled(partition: lease.partition, status: response.statusCode, retryAfter: observation.retryAfter)
            )
        }
        carryOut(output, for: lease.partition)
        guard let updated = output.updated else { return nil }
        policy.onEvent?(
            .updated(
                partition: lease.partition,
                limit: updated.limit,
                remaining: updated.remaining,
                resetIn: updated.resetAt.map { $0 - now }
            )
        )
        return RateLimitQuota(
            limit: updated.limit,
            remaining: updated.remaining,
            resetsAt: updated.resetAt.map { policy.currentDate().addingTimeInterval(($0 - now).timeInterval) },
            window: updated.window
        )
    }

    /// Whether `response` came from the host and port `request` was sent to; `true` when either has no URL.
    static func isFrom(_ response: HTTPURLResponse, hostOf request: URLRequest) -> Bool {
        guard let responseURL = response.url, let requestURL = request.url else { return true }
        return HostKey.of(responseURL) == HostKey.of(requestURL)
    }

    /// Writes what a response said about `partition`'s quota to the store; a store's error is ignored. The
    /// default in-memory store is written at once; any other store by ``StoreWriter``, off the response's path,
    /// so that a response never waits for a round trip to a shared store.
    func record(_ quota: RateLimitQuota, for partition: String) async {
        if let inMemoryStore {
            await inMemoryStore.record(quota, for: partition)
        } else {
            writer.write(quota, for: partition)
        }
    }

    /// Returns once every quota recorded so far was written to the store (or failed to be): for tests.
    func storeWritesSettled() async {
        await writer.settled()
    }

    /// What the store holds for `partition`, or `nil` when it holds nothing, fails, or does not answer within
    /// ``RateLimitPolicy/storeTimeout``.
    private func readQuota(_ partition: String) async -> RateLimitQuota? {
        if let inMemoryStore { return await inMemoryStore.quota(for: partition) }
        let store = store
        let read = try? await StoreCall.bounded(
            "the rate-limit store did not answer a read",
            limit: policy.storeTimeout,
            sleep: sleepFor
        ) { try await store.quota(for: partition) }
        return read ?? nil
    }

    /// Whether `lease`'s partition is paced (by the server's numbers or a client limit): a slot that must not be
    /// held through a wait for the fleet's next window.
    func paces(_ lease: Lease) -> Bool {
        lock.withLock { _ in !lease.slot.value.isUnlimited }
    }

    /// Whether `lease` was taken in a window of ``RateLimitPolicy/clientLimit`` that has ended (its request waited
    /// for a reservation of the fleet meanwhile): then it holds no slot of the current window, and its request must
    /// give it back with ``returnUnused(_:)`` and ``acquire(_:partition:since:)`` one of the current window before
    /// it is sent. Without a client limit, `false` without a lock or a clock read.
    func outlivedClientWindow(_ lease: Lease) -> Bool {
        guard settings.clientWindow != nil else { return false }
        let now = elapsed()
        return lock.withLock { _ in lease.slot.value.outlivedClientWindow(lease.ticket, now: now) }
    }

    /// Gives back the slot of a request that was never sent.
    func returnUnused(_ lease: Lease) {
        let now = elapsed()
        let output = lock.withLock { _ in lease.slot.value.returnUnused(lease.ticket, now: now) }
        carryOut(output, for: lease.partition)
    }

    private func tick(_ partition: String) {
        let now = elapsed()
        guard let output = lock.withLock({ _ in partitions.value.slots[ExactString(partition)]?.value.tick(now: now) })
        else {
            return
        }
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
    /// the limiter weakly, so a limiter no longer used is freed without waiting for it. It is shared work
    /// (``SharedWork``), so that a manual clock's run sees the waiters it wakes before it moves time again.
    private func schedule(_ offset: Duration, for partition: String) {
        let sleepUntil = self.sleepUntil
        SharedWork.start { [weak self] in
            await SharedWork.withoutCallContext {
                try? await sleepUntil(offset)
                self?.tick(partition)
            }
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

    static func reason(_ rejection: Machine.Rejection) -> RateLimitEvent.Reason {
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
