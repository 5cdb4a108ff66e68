import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RateLimitPolicy {
    /// A quota that the replicas sharing a limiter's ``RateLimitStore`` split between them: `maxRequests` per
    /// `window` for the whole fleet, whatever the number of replicas.
    ///
    /// ```swift
    /// let store = try PostgresRateLimitStore(client: postgres)   // or any store the replicas share
    /// let limiter = RateLimiter(
    ///     RateLimitPolicy(sharedLimit: .init(maxRequests: 100, per: .seconds(2))),
    ///     store: store
    /// )
    /// ```
    ///
    /// Each request takes a slot of the fleet's current window before it is sent. A replica takes its slots
    /// from the store in blocks (``RateLimitStore/reserve(_:in:limit:window:)``), up to ``blockSize``, so most
    /// requests pay no round trip to the store: one that finds a slot left in its replica's block pays none. A
    /// block holds as many slots as requests are waiting, or twice as many as were taken from the last block,
    /// whichever is more (1, 2, 4, … for a replica that keeps sending). A replica that has sent nothing for a twentieth
    /// of the window gives back the slots left in its block (``RateLimitStore/release(_:of:)``). When the window
    /// is used up, requests wait for the next one, in the limits of ``RateLimitPolicy/maximumWait`` and the
    /// call's deadline, like any other wait of the limiter.
    ///
    /// **Windows and their margin.** The store opens a window with the first reservation after the last one
    /// ended. Replicas send a window's requests only during its first `window` and then leave a ``margin`` of
    /// silence before the next window opens: a request reaches the server a little after it took its slot, and
    /// the margin keeps a window's last requests and the next one's first apart whatever the phase of the
    /// server's own windows. The fleet sends at most `maxRequests` per `window + margin`, however slowly the store
    /// answers: a replica counts the time left in a window from when it asked, not from the answer.
    ///
    /// **When the store fails** (it throws, or does not answer within ``RateLimitPolicy/storeTimeout``), the
    /// limiter reports
    /// ``RateLimitEvent/storeFailed(partition:message:)`` and the partition's requests go without shared slots
    /// for one window, paced only by what the server says, as without a shared limit; then it asks the store
    /// again. A caller never waits for the store past its deadline.
    ///
    /// The limit applies with the server's own numbers (and a ``RateLimitPolicy/clientLimit``): a request takes
    /// their slot first, then the fleet's. When the fleet's window is used up, it gives the first back while it
    /// waits for the next window and takes both again then, so requests that waited through a window of the fleet
    /// go at the limiter's pace when the next opens, not all at once. It keeps the first only while its replica
    /// asks the store for a block (at most ``RateLimitPolicy/storeTimeout``). When a slow store holds it past the
    /// end of a client limit's window, that slot goes to no one: the request takes one of the current client window,
    /// waiting for it like any other request, before it takes the fleet's, so no client window sends more than its
    /// `maxRequests`. A slot of the server's numbers stays with it: the server's next window counts it.
    public struct SharedLimit: Sendable, Hashable {
        /// The most requests the fleet sends per window; at least 1.
        public var maxRequests: Int
        /// The length of a window.
        public var window: Duration
        /// The most slots a replica takes from the store at once; at least 1. By default a tenth of
        /// ``maxRequests``.
        public var blockSize: Int
        /// How long the fleet sends nothing between two windows; a twentieth of ``window`` by default.
        public var margin: Duration

        /// Creates a shared limit of `maxRequests` per `window`.
        public init(
            maxRequests: Int,
            per window: Duration,
            blockSize: Int? = nil,
            margin: Duration? = nil
        ) {
            precondition(maxRequests > 0, "a shared limit must allow at least one request")
            precondition(window > .zero, "a shared window must be longer than zero")
            precondition((blockSize ?? 1) > 0, "a block must hold at least one slot")
            precondition((margin ?? .zero) >= .zero, "a margin must not be negative")
            self.maxRequests = maxRequests
            self.window = window
            self.blockSize = blockSize ?? max(1, maxRequests / 10)
            self.margin = margin ?? window / 20
        }
    }
}

/// The slots of a ``RateLimitPolicy/SharedLimit`` this replica holds, by partition: the state behind the
/// shared limit of a ``RateLimiter``.
final class SharedQuota: Sendable {
    /// One partition's block and the requests waiting for the next.
    struct Block {
        /// Slots of the block not taken yet.
        var left = 0
        /// When this replica stops sending with the block's slots, on the limiter's clock: its window's end
        /// less the margin.
        var usableUntil: Duration = .zero
        /// When the block's window ends in the store, on the limiter's clock.
        var windowEndsAt: Duration = .zero
        /// Whether the store granted fewer slots than asked for: the window is used up.
        var usedUp = false
        /// Whether a reservation is under way.
        var fetching = false
        /// Until when the partition's requests go without shared slots, after the store failed.
        var bypassUntil: Duration?
        /// Requests sent with a shared slot whose response has not come back.
        var inFlight = 0
        /// Requests asking for a slot.
        var pending = 0
        /// Requests waiting for the reservation under way, by id.
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
        /// The reservation the block's slots came from: what an idle replica gives back its unused slots of.
        var reservation: RateLimitReservation?
        /// Slots taken from the block since it was reserved; the next block asks for twice as many.
        var taken = 0
        /// When a request of the partition last took a slot or ended.
        var lastActive: Duration = .zero
        /// Whether a task will give back the block's slots once the replica has been idle long enough.
        var givingBack = false

        /// Whether forgetting the block at `now` loses nothing: nobody asks, waits or sends with it, no reservation
        /// or giving back is under way, and its window and any bypass are over.
        func holdsNothing(now: Duration) -> Bool {
            inFlight == 0 && pending == 0 && !fetching && waiters.isEmpty && !givingBack && windowEndsAt <= now
                && (bypassUntil.map { $0 <= now } ?? true)
        }
    }

    /// The blocks by partition. By bytes (``ExactString``): partitions that differ in bytes never share a block.
    /// Past ``sweepAt`` partitions, a new one first forgets those that hold nothing, as the limiter's partitions do.
    struct Blocks {
        var entries: [ExactString: Block] = [:]
        var sweepAt = 1_024

        subscript(key: ExactString) -> Block? {
            get { entries[key] }
            _modify { yield &entries[key] }
        }

        /// Runs `body` on the block of `key` in place, a new one when there is none; past ``sweepAt`` partitions,
        /// making one forgets the blocks that hold nothing at `now` first.
        mutating func update<Result>(_ key: ExactString, now: Duration, _ body: (inout Block) -> Result) -> Result {
            if entries.count >= sweepAt, entries[key] == nil {
                entries = entries.filter { !$0.value.holdsNothing(now: now) }
                sweepAt = max(1_024, entries.count * 2)
            }
            return body(&entries[key, default: Block()])
        }
    }

    /// What ``take(_:partition:arrival:paced:heldSlotEnded:)`` got a request.
    enum Taken: Equatable {
        /// A slot of the fleet's window (or none needed while the store is bypassed): the request may go.
        case slot
        /// The window is used up and the request is paced: the fleet's next window opens at this time on the
        /// limiter's clock, checked against the deadline and the maximum wait.
        case nextWindow(opensAt: Duration)
        /// The limiter's slot the request holds ended while it waited for a reservation; it took no slot here.
        case heldSlotEnded
    }

    /// What a request does next.
    private enum Step {
        /// It holds a slot (or goes without one while the store is bypassed).
        case go
        /// It waits for the reservation under way; `reserve` is the number of slots to ask for when this
        /// request starts it.
        case wait(reserve: Int?)
        /// The window is used up: it waits until the store opens the next one.
        case sleep(until: Duration)
    }

    let limit: RateLimitPolicy.SharedLimit
    private let store: any RateLimitStore
    private let policy: RateLimitPolicy
    private let elapsed: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void
    /// Sleeps for a duration on the same clock: the bound of a reservation.
    private let sleepFor: @Sendable (Duration) async throws -> Void
    private let blocks = LockedState(Blocks())

    init(
        _ limit: RateLimitPolicy.SharedLimit,
        store: any RateLimitStore,
        policy: RateLimitPolicy,
        elapsed: @escaping @Sendable () -> Duration,
        sleepUntil: @escaping @Sendable (Duration) async throws -> Void,
        sleepFor: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.limit = limit
        self.store = store
        self.policy = policy
        self.elapsed = elapsed
        self.sleepUntil = sleepUntil
        self.sleepFor = sleepFor
    }

    /// Takes a slot of `partition`'s shared window for `request`, waiting for a reservation when needed; call
    /// ``finished(_:)`` when the request ends.
    ///
    /// When the window is used up and `paced` (the request holds a slot the limiter paces: the server's numbers or
    /// a client limit), it does not wait for the next window: it returns when that opens, for the caller to give
    /// back the limiter's slot, ``sleep(until:)``, and ask both again. A request waiting for the fleet's next window
    /// then holds no slot of the server's or client limit, so requests that waited through a window do not all go
    /// at once when the next opens, past the limiter's pace. A request the limiter does not pace waits here, still
    /// counted among the requests asking for a slot, so the next window's first block is sized for all of them.
    ///
    /// After each wait for a reservation, before it takes a slot, it asks `heldSlotEnded` whether the limiter's slot
    /// it holds has ended meanwhile (a client limit's window): then it returns ``Taken/heldSlotEnded`` holding no
    /// slot here, for the caller to take one of the limiter's current window and ask again. So it never holds a slot
    /// of the fleet while it waits for the limiter's.
    ///
    /// `arrival` is when the request reached the limiter (``now()``), so that ``RateLimitPolicy/maximumWait``
    /// bounds its whole wait: for the server's or client limit's slot, then for this one.
    ///
    /// - Returns: ``Taken/slot`` when the request holds a slot (or goes without one while the store is bypassed),
    ///   ``Taken/nextWindow(opensAt:)`` when `paced` and the window is used up, or ``Taken/heldSlotEnded``.
    /// - Throws: ``CourierError/Code/timedOut`` when the slot would come after the call's deadline,
    ///   ``CourierError/Code/rateLimited`` when it would come (or a reservation would end) after
    ///   ``RateLimitPolicy/maximumWait``, and `CancellationError` when the task is cancelled.
    func take(
        _ request: URLRequest,
        partition: String,
        arrival: Duration? = nil,
        paced: Bool = false,
        heldSlotEnded: () -> Bool = { false }
    ) async throws -> Taken {
        let now = elapsed()
        let start = arrival ?? now
        let deadline = Deadline.current
        let deadlineOffset = deadline.map { now + $0.timeLeft }
        var arriving = true
        var gone = false
        var reserved = false
        // `pending` counts the request from its first step on: a task cancelled before that counts nothing.
        defer { if !gone, !arriving { blocks.withLock { blocks in blocks[ExactString(partition)]?.pending -= 1 } } }
        while true {
            try Task.checkCancellation()
            if reserved, heldSlotEnded() { return .heldSlotEnded }
            let now = elapsed()
            let step = blocks.withLock { blocks in
                blocks.update(ExactString(partition), now: now) { Self.next(&$0, now: now, limit, arriving: arriving) }
            }
            arriving = false
            switch step {
            case .go:
                gone = true
                return .slot
            case .sleep(let until):
                if let deadlineOffset, until >= deadlineOffset {
                    throw reject(.pastDeadline(opensIn: until - now), partition, request, deadline)
                }
                if let maximum = policy.maximumWait, until - start > maximum {
                    throw reject(.waitTooLong(opensIn: until - now, maximum: maximum), partition, request, deadline)
                }
                if paced { return .nextWindow(opensAt: until) }
                try await sleepUntil(until)
            case .wait(let reserve):
                if let reserve { startReservation(of: reserve, in: partition) }
                try await waitForReservation(
                    in: partition,
                    request: request,
                    deadline: deadlineOffset,
                    deadline,
                    maximumWaitEnds: policy.maximumWait.map { start + $0 }
                )
                reserved = true
            }
        }
    }

    /// The limiter's clock now: a request's ``take(_:partition:arrival:paced:heldSlotEnded:)`` arrival.
    func now() -> Duration { elapsed() }

    /// Sleeps until `offset` on the limiter's clock, the opening of a window
    /// ``take(_:partition:arrival:paced:heldSlotEnded:)`` returned; throws `CancellationError` at once when the task
    /// is cancelled.
    func sleep(until offset: Duration) async throws {
        try await sleepUntil(offset)
    }

    /// The block of `partition`, if it was used (for tests and diagnostics).
    func block(_ partition: String) -> Block? {
        blocks.withLock { blocks in blocks[ExactString(partition)] }
    }

    /// Records that a request that took a slot of `partition` ended. When it was the last one and slots are left
    /// in the block, they go back to the store once the replica has sent nothing for ``idleBeforeGivingBack``.
    func finished(_ partition: String) {
        let now = elapsed()
        let giveBack = blocks.withLock { blocks -> Bool in
            guard var block = blocks[ExactString(partition)] else { return false }
            defer { blocks[ExactString(partition)] = block }
            block.inFlight -= 1
            block.lastActive = now
            guard block.inFlight == 0, block.pending == 0, block.left > 0, !block.givingBack else { return false }
            block.givingBack = true
            return true
        }
        if giveBack { startGivingBack(partition, idleSince: now) }
    }

    /// Gives back the slots left in `partition`'s block once no request has taken one or ended for
    /// ``idleBeforeGivingBack``, in a task of its own, bounded by the store timeout.
    private func startGivingBack(_ partition: String, idleSince: Duration) {
        let (store, policy, sleepUntil, sleepFor, elapsed, idle) = (
            store, policy, sleepUntil, sleepFor, elapsed, idleBeforeGivingBack
        )
        SharedWork.start { [weak self] in
            await SharedWork.withoutCallContext {
                var wake = idleSince + idle
                while true {
                    guard (try? await sleepUntil(wake)) != nil, let self else { return }
                    let now = elapsed()
                    enum Next {
                        case stop
                        case sleep(Duration)
                        case giveBack(Int, RateLimitReservation)
                    }
                    let next = self.blocks.withLock { blocks -> Next in
                        guard var block = blocks[ExactString(partition)] else { return .stop }
                        defer { blocks[ExactString(partition)] = block }
                        guard block.inFlight == 0, block.pending == 0, !block.fetching, block.left > 0,
                            block.usableUntil > now, let reservation = block.reservation
                        else {
                            // Busy again (the last request to end starts this again), or nothing worth giving back.
                            block.givingBack = false
                            return .stop
                        }
                        if now - block.lastActive < idle { return .sleep(block.lastActive + idle) }
                        let count = block.left
                        (block.left, block.taken, block.givingBack) = (0, 0, false)
                        return .giveBack(count, reservation)
                    }
                    switch next {
                    case .stop:
                        return
                    case .sleep(let until):
                        wake = until
                    case .giveBack(let count, let reservation):
                        do {
                            try await StoreCall.bounded(
                                "the rate-limit store did not answer a release",
                                limit: policy.storeTimeout,
                                sleep: sleepFor
                            ) { try await store.release(count, of: reservation) }
                        } catch {
                            let message = Redaction.redactedText(String(describing: error))
                            policy.onEvent?(.storeFailed(partition: partition, message: message))
                        }
                        return
                    }
                }
            }
        }
    }

    /// What a request of `block` does at `now`.
    /// `arriving` is whether the request asks for the first time.
    private static func next(
        _ block: inout Block,
        now: Duration,
        _ limit: RateLimitPolicy.SharedLimit,
        arriving: Bool
    ) -> Step {
        if arriving { block.pending += 1 }
        if let bypassUntil = block.bypassUntil {
            if bypassUntil > now {
                block.pending -= 1
                block.inFlight += 1
                return .go
            }
            block.bypassUntil = nil
        }
        if block.fetching { return .wait(reserve: nil) }
        if block.usableUntil > now, block.left > 0 {
            block.left -= 1
            block.taken += 1
            block.lastActive = now
            block.pending -= 1
            block.inFlight += 1
            return .go
        }
        if block.windowEndsAt > now, block.usedUp || block.usableUntil <= now {
            return .sleep(until: block.windowEndsAt)
        }
        block.fetching = true
        return .wait(reserve: blockToAsk(block, limit))
    }

    /// How many slots to ask the store for, up to the block size: as many as requests ask for now, or twice as
    /// many as were taken from the last block, whichever is more. A replica that keeps sending asks for 1, 2, 4, …
    /// slots, so its round trips to the store fall to one per block, whether it sends one request at a time or
    /// sixteen; the slots it does not use go back once it has been idle for a while (``finished(_:)``). The cost:
    /// when the fleet's window runs short, a replica may hold a few slots more than it has requests for, which
    /// another replica, refused, waits for the next window to make up (a few percent of a window at most).
    static func blockToAsk(_ block: Block, _ limit: RateLimitPolicy.SharedLimit) -> Int {
        let (doubled, overflow) = block.taken.multipliedReportingOverflow(by: 2)
        return min(limit.blockSize, max(block.pending, overflow ? limit.blockSize : doubled))
    }

    /// How long a replica sends nothing in a partition before it gives back the slots left in its block: a
    /// twentieth of the window.
    var idleBeforeGivingBack: Duration { limit.window / 20 }

    /// Asks the store for `count` slots of `partition`'s window, in a task of its own, and wakes every request
    /// waiting for it when it ends.
    private func startReservation(of count: Int, in partition: String) {
        let (store, limit, policy, elapsed, sleepFor) = (store, limit, policy, elapsed, sleepFor)
        SharedWork.start {
            await SharedWork.withoutCallContext {
                // The window's end is counted from when the store was asked, not from its answer: a store may count
                // it from when it began (PostgreSQL's statement time, a wait for the row's lock included), so
                // counting from the answer would stretch the window by the store's latency, past the fleet's.
                let asked = elapsed()
                let result: Result<RateLimitReservation, any Error>
                do {
                    result = .success(
                        try await StoreCall.bounded(
                            "the rate-limit store did not answer a reservation",
                            limit: policy.storeTimeout,
                            sleep: sleepFor
                        ) {
                            try await store.reserve(
                                count,
                                in: partition,
                                limit: limit.maxRequests,
                                window: limit.window + limit.margin
                            )
                        }
                    )
                } catch {
                    result = .failure(error)
                }
                let now = elapsed()
                let endsIn = result.map { reservation in
                    NetworkNumber.duration(seconds: reservation.windowEndsAt.timeIntervalSince(policy.currentDate()))
                }
                let waiters = self.blocks.withLock { blocks in
                    var block = blocks[ExactString(partition)] ?? Block()
                    defer {
                        block.waiters = [:]
                        blocks[ExactString(partition)] = block
                    }
                    block.fetching = false
                    switch (result, endsIn) {
                    case (.success(let reservation), .success(let endsIn)):
                        // A store is not trusted further than a server: never more slots than asked for, never a
                        // window longer than asked for, and one that ended is waited for a little, not spun on.
                        let granted = min(max(reservation.granted, 0), count)
                        let windowLength = limit.window + limit.margin
                        let endsIn = min(max(endsIn, windowLength / 100), windowLength)
                        block.left = granted
                        block.taken = 0
                        block.reservation = reservation
                        block.usedUp = granted < count
                        block.windowEndsAt = max(asked + endsIn, now + windowLength / 100)
                        block.usableUntil = asked + endsIn - limit.margin
                    default:
                        block.bypassUntil = now + limit.window
                    }
                    return Array(block.waiters.values)
                }
                if case .failure(let error) = result {
                    let message = Redaction.redactedText(String(describing: error))
                    policy.onEvent?(.storeFailed(partition: partition, message: message))
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Waits until the reservation under way for `partition` ends, or throws when the call's deadline
    /// (`deadlineOffset`) or the request's maximum wait (`maximumWaitEnds`) passes first or the task is
    /// cancelled.
    private func waitForReservation(
        in partition: String,
        request: URLRequest,
        deadline deadlineOffset: Duration?,
        _ deadline: Deadline?,
        maximumWaitEnds: Duration?
    ) async throws {
        let id = LockedState<Int?>(nil)
        let timer = LockedState<Task<Void, Never>?>(nil)
        defer { timer.withLock { $0 }?.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let registered = blocks.withLock { blocks -> Bool in
                    guard blocks[ExactString(partition)]?.fetching == true, !Task.isCancelled else { return false }
                    let number = blocks[ExactString(partition)]!.nextWaiter
                    blocks[ExactString(partition)]!.nextWaiter += 1
                    blocks[ExactString(partition)]!.waiters[number] = continuation
                    id.withLock { $0 = number }
                    return true
                }
                guard registered else {
                    return Task.isCancelled
                        ? continuation.resume(throwing: CancellationError()) : continuation.resume()
                }
                // The earlier of the deadline and the end of the maximum wait, and what passing it means.
                let end: (at: Duration, rejection: RateLimiter.Machine.Rejection)
                switch (deadlineOffset, maximumWaitEnds, policy.maximumWait) {
                case (let deadlineOffset?, let waitEnds?, let maximum?) where waitEnds < deadlineOffset:
                    end = (waitEnds, .waitTooLong(opensIn: nil, maximum: maximum))
                case (let deadlineOffset?, _, _):
                    end = (deadlineOffset, .pastDeadline(opensIn: nil))
                case (nil, let waitEnds?, let maximum?):
                    end = (waitEnds, .waitTooLong(opensIn: nil, maximum: maximum))
                default:
                    return
                }
                let sleepUntil = sleepUntil
                timer.withLock { timer in
                    timer = SharedWork.start { [weak self] in
                        guard (try? await sleepUntil(end.at)) != nil, let self,
                            let waiter = self.remove(id, from: partition)
                        else { return }
                        waiter.resume(throwing: self.reject(end.rejection, partition, request, deadline))
                    }
                }
            }
        } onCancel: {
            remove(id, from: partition)?.resume(throwing: CancellationError())
        }
    }

    /// Takes the waiter `id` out of `partition`'s queue, if it is still there.
    ///
    /// The id is read under the blocks' lock, where the waiter registers it: a cancellation handler that runs
    /// while the waiter registers either comes first (and the waiter, seeing the task cancelled, does not
    /// register) or finds the id.
    private func remove(_ id: LockedState<Int?>, from partition: String) -> CheckedContinuation<Void, any Error>? {
        blocks.withLock { blocks in
            guard let number = id.withLock({ $0 }) else { return nil }
            return blocks[ExactString(partition)]?.waiters.removeValue(forKey: number)
        }
    }

    /// The error for `rejection`, reported as an event.
    private func reject(
        _ rejection: RateLimiter.Machine.Rejection,
        _ partition: String,
        _ request: URLRequest,
        _ deadline: Deadline?
    ) -> CourierError {
        policy.onEvent?(.rejected(partition: partition, reason: RateLimiter.reason(rejection)))
        return RateLimiter.error(rejection, request: request, timeout: deadline?.timeout)
    }
}
