/// The rate limit of one partition, as a value: requests and responses go in, what to do comes out.
///
/// `Waiter` is what the limiter resumes (a continuation); tests use plain values. Time is a `Duration` since
/// the limiter's clock started, so tests drive the machine with plain numbers.
///
/// What the machine knows, and how a request is let through:
/// - **Nothing yet**: one request goes as a *probe*; the others wait for its response. A probe that comes
///   back without rate-limit fields makes the partition *unlimited* (every request goes); one that fails
///   without a response lets the next waiter probe.
/// - **A quota** (`remaining` requests until `resetAt`): each request sent takes a slot at once (a
///   *reservation*), so requests in flight count before their responses come back. Responses reconcile
///   with the server's own numbers: within a window, while the server has counted no more requests than
///   this client sent in it, the client's own count is exact and stays; when the server has counted more
///   (someone else shares the quota), `remaining` goes down to the server's remaining minus the requests
///   still in flight (they may not have been counted yet). A response showing a later window starts that
///   window; a late response from an earlier window is ignored. Windows are told apart by their resets,
///   half a window apart or more, so this holds while response times vary by less than half a window.
/// - **A new window** at `resetAt`: `remaining` is the limit again, minus the requests still in flight
///   (the server may count them in the new window); each of those that comes back showing it was counted in
///   the old window gives its slot back. With a known window length the next reset is predicted.
/// - **Throttled** (`429`/`503`): nothing goes until `Retry-After` (or the reset, or `fallbackDelay`).
/// - **A quota of 0**, or nothing left and no limit known: at the reset (or after `fallbackDelay` when the
///   server gave none) one request probes again, and the server's answer to it decides.
/// - **Client-side limit** (`clientLimit` per `clientWindow`): used from the start instead of a probe, until
///   the server sends numbers of its own. A `429` or `503` without numbers holds the partition until its
///   `Retry-After` (or `fallbackDelay`) and keeps the client-side limit and its window: a refusal is not a number.
///
/// Waiters are served in FIFO order and never overtaken. A waiter is refused (at once, or as soon as the
/// machine learns it) when the queue is full, when its slot would open after its deadline, or when it would
/// wait longer than `maximumWait`; for waiters whose slot time is not known yet, a tick at the deadline or at
/// the end of the maximum wait refuses them then.
struct RateLimitStateMachine<Waiter> {
    /// What the partition is configured with.
    struct Settings: Sendable, Equatable {
        var maximumQueueLength: Int?
        var maximumWait: Duration?
        var clientLimit: Int?
        var clientWindow: Duration?
        var fallbackDelay: Duration
    }

    /// What a request that is let through holds until its response.
    struct Ticket: Sendable, Equatable {
        /// The window it was sent in (counts windows started, not server windows).
        let epoch: Int
        /// Whether it is the probe sent when nothing is known.
        let isProbe: Bool
    }

    /// Why a request is refused.
    enum Rejection: Sendable, Equatable {
        /// `maximum` requests already wait in the partition.
        case queueFull(maximum: Int)
        /// The slot opens (in `opensIn`, when known) too late for the maximum wait.
        case waitTooLong(opensIn: Duration?, maximum: Duration)
        /// The slot opens (in `opensIn`, when known) at or after the call's deadline.
        case pastDeadline(opensIn: Duration?)
    }

    enum AcquireAction: Equatable {
        case send(Ticket)
        /// Make a continuation and ``enqueue(_:id:now:deadline:isCancelled:)`` it under `id`.
        case suspend(id: Int)
        case reject(Rejection)
    }

    enum EnqueueAction: Equatable {
        case send(Ticket)
        /// Waiting; when `scheduleTick` is given, call ``tick(now:)`` at that time.
        case waiting(scheduleTick: Duration?)
        case cancelled
        case reject(Rejection)
    }

    /// What the machine knows of the quota, for events and the shared store.
    struct Quota: Sendable, Equatable {
        var limit: Int?
        var remaining: Int
        var resetAt: Duration?
        var window: Duration?
    }

    /// What ``complete(_:observation:now:)`` and ``tick(now:)`` ask the limiter to do.
    struct Output {
        /// Waiters to resume with a ticket, and how long each waited.
        var sends: [(waiter: Waiter, ticket: Ticket, waited: Duration)] = []
        /// Waiters to fail.
        var rejections: [(waiter: Waiter, rejection: Rejection)] = []
        /// Call ``tick(now:)`` at this time.
        var scheduleTick: Duration?
        /// The quota, when a response changed it.
        var updated: Quota?
    }

    private struct Entry {
        let id: Int
        let waiter: Waiter
        let since: Duration
        let deadline: Duration?
    }

    let settings: Settings
    private(set) var limit: Int?
    private(set) var window: Duration?
    /// Requests that may still be sent in this window; `nil` when nothing is known.
    private(set) var remaining: Int?
    /// When the current window ends, when known.
    private(set) var resetAt: Duration?
    /// A probe came back without rate-limit fields: every request goes.
    private(set) var isUnlimited = false
    /// The numbers came from the server (not from the client-side limit).
    private(set) var isFromServer = false
    /// Nothing goes before this time: a `429` or `503` without numbers under the client-side limit, which
    /// pauses the client's window without ending it.
    private(set) var heldUntil: Duration?
    private(set) var epoch = 0
    private(set) var inFlight = 0
    private(set) var isProbeInFlight = false
    /// Requests in flight that were sent in an earlier window.
    private(set) var carried = 0
    /// Our requests the server may count in the current window: those sent in it, those carried into it,
    /// and the one whose response started it.
    private(set) var sentInWindow = 0
    private var entries: [Entry] = []
    /// Requests told to suspend that have not enqueued yet: the partition holds them as much as its waiters.
    private var announced = 0
    private var lastID = 0
    private var scheduledTick: Duration?

    init(settings: Settings) {
        self.settings = settings
        if let clientLimit = settings.clientLimit {
            precondition(clientLimit > 0, "a client-side limit must allow at least one request")
            limit = clientLimit
            remaining = clientLimit
            window = settings.clientWindow
        }
    }

    /// How many requests wait.
    var waiterCount: Int { entries.count }

    /// The quota as known now, or `nil` when nothing is known or the partition is unlimited. During a hold (a
    /// refusal without numbers under the client-side limit), nothing left until it ends, and no limit or window:
    /// the client's own are not the server's, and a replica that starts from this holds as long.
    var quota: Quota? {
        if let heldUntil { return Quota(limit: nil, remaining: 0, resetAt: heldUntil, window: nil) }
        return remaining.map { Quota(limit: limit, remaining: $0, resetAt: resetAt, window: window) }
    }

    /// Whether forgetting the partition at `now` changes nothing but the next request's being a probe: nobody
    /// waits, nothing is in flight, and no window, hold or reset is still to come.
    func holdsNothing(now: Duration) -> Bool {
        entries.isEmpty && announced == 0 && inFlight == 0 && (resetAt.map { $0 <= now } ?? true)
            && (heldUntil.map { $0 <= now } ?? true)
    }

    // MARK: Events

    /// Starts from a quota another replica stored, when nothing is known here yet.
    mutating func seed(_ quota: Quota, now: Duration) {
        guard remaining == nil || !isFromServer, inFlight == 0, let resetAt = quota.resetAt, resetAt > now else {
            return
        }
        if settings.clientLimit != nil, !isFromServer, quota.limit == nil, quota.remaining == 0 {
            // Another replica's hold (a refusal without numbers): hold as long, keeping the client-side limit.
            heldUntil = max(heldUntil ?? resetAt, resetAt)
            return
        }
        isFromServer = true
        isUnlimited = false
        limit = quota.limit
        window = quota.window
        remaining = quota.remaining
        self.resetAt = resetAt
    }

    /// A request arrives at `now`; `deadline` is its call's deadline, and `since` when it first asked the limiter
    /// (earlier than `now` after it waited for a shared window), from which the maximum wait counts.
    mutating func acquire(now: Duration, since: Duration? = nil, deadline: Duration?) -> AcquireAction {
        roll(now)
        if entries.isEmpty, let ticket = take(now) { return .send(ticket) }
        if let rejection = check(position: entries.count, since: since ?? now, deadline: deadline, now: now) {
            return .reject(rejection)
        }
        lastID += 1
        announced += 1
        return .suspend(id: lastID)
    }

    /// ``acquire(now:since:deadline:)`` without the time, for a partition where it cannot matter: unlimited, nobody
    /// waiting, no reset pending. Returns the ticket `acquire` would return at any time, or `nil` (changing nothing)
    /// when the time or the deadline may matter.
    mutating func acquireUntimed() -> Ticket? {
        guard isUnlimited, entries.isEmpty, resetAt == nil, heldUntil == nil else { return nil }
        inFlight += 1
        return Ticket(epoch: epoch, isProbe: false)
    }

    /// The request told to suspend under `id` has made its `waiter`. `isCancelled` is its task's
    /// cancellation, read under the same lock as this call.
    mutating func enqueue(
        _ waiter: Waiter,
        id: Int,
        now: Duration,
        since: Duration? = nil,
        deadline: Duration?,
        isCancelled: Bool
    ) -> EnqueueAction {
        announced -= 1
        if isCancelled { return .cancelled }
        roll(now)
        if entries.isEmpty, let ticket = take(now) { return .send(ticket) }
        let since = since ?? now
        if let rejection = check(position: entries.count, since: since, deadline: deadline, now: now) {
            return .reject(rejection)
        }
        entries.append(Entry(id: id, waiter: waiter, since: since, deadline: deadline))
        return .waiting(scheduleTick: tickToSchedule(now: now))
    }

    /// The waiter under `id` was cancelled: returns it to resume with `CancellationError`, or `nil` when it is
    /// no longer waiting.
    mutating func cancel(id: Int) -> Waiter? {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
        return entries.remove(at: index).waiter
    }

    /// A ticket is handed back unused (its request was cancelled before it was sent): its slot is free again.
    mutating func returnUnused(_ ticket: Ticket, now: Duration) -> Output {
        roll(now)
        inFlight -= 1
        if ticket.isProbe { isProbeInFlight = false }
        let wasCarried = ticket.epoch < epoch
        if wasCarried { carried -= 1 }
        // A slot goes back to the window it was taken from. A client window that has ended took nothing from the
        // current one, so its slot is worth nothing here; the server's window counted the request carried into it
        // (`remaining` is its limit less what was carried), so it gets that slot back.
        if let remaining, !wasCarried || isFromServer {
            self.remaining = remaining + 1
            sentInWindow -= 1
            capRemaining()
        }
        return wake(now: now)
    }

    /// Whether `ticket`, not used yet, was taken in a client window that has ended by `now`. A new client window
    /// counts nothing carried into it (``roll(_:)``), so the ticket holds no slot of the current one: its request
    /// must not be sent with it. A server's window counts what was carried into it, so a ticket of an earlier one
    /// still holds a slot.
    mutating func outlivedClientWindow(_ ticket: Ticket, now: Duration) -> Bool {
        roll(now)
        return ticket.epoch < epoch && !isFromServer && settings.clientLimit != nil
    }

    /// A request that was let through ended at `now`: with a response (`observation` is what it said about
    /// the rate limit) or without one (`nil`: an error, a cancellation).
    mutating func complete(_ ticket: Ticket, observation: RateLimitObservation?, now: Duration) -> Output {
        roll(now)
        inFlight -= 1
        if ticket.isProbe { isProbeInFlight = false }
        let wasCarried = ticket.epoch < epoch
        if wasCarried { carried -= 1 }
        var updated: Quota?
        if let observation, observation.isThrottled || observation.remaining != nil {
            apply(observation, now: now, wasCarried: wasCarried)
            updated = quota
        } else if let observation, ticket.isProbe, remaining == nil {
            // The probe came back and the server said nothing (or only a limit): nothing to pace by.
            isUnlimited = true
            limit = observation.limit ?? limit
        }
        if remaining == 0, resetAt == nil, inFlight == 0 {
            // Nothing left and nobody will say until when: hold for the fallback delay, then start again.
            resetAt = now + settings.fallbackDelay
        }
        var output = wake(now: now)
        output.updated = updated
        return output
    }

    /// ``complete(_:observation:now:)`` without the time, for a partition where it cannot matter: unlimited, nobody
    /// waiting, no reset pending, and a response that brings no quota (`observation` neither throttled nor with a
    /// `remaining`). Then `complete` would return an empty output at any time; this makes the same change and
    /// returns `true`. Returns `false`, changing nothing, in every other case.
    mutating func completeUntimed(_ ticket: Ticket, observation: RateLimitObservation?) -> Bool {
        guard isUnlimited, entries.isEmpty, resetAt == nil, remaining == nil else { return false }
        if let observation, observation.isThrottled || observation.remaining != nil { return false }
        inFlight -= 1
        if ticket.isProbe {
            isProbeInFlight = false
            if let observation { limit = observation.limit ?? limit }
        }
        if ticket.epoch < epoch { carried -= 1 }
        return true
    }

    /// Time passed: a window may have opened, a deadline or the maximum wait may have passed.
    mutating func tick(now: Duration) -> Output {
        if let scheduledTick, scheduledTick <= now { self.scheduledTick = nil }
        return wake(now: now)
    }

    // MARK: Transitions

    private mutating func wake(now: Duration) -> Output {
        roll(now)
        var output = Output()
        // Refusals first, so that a waiter whose deadline is now is refused rather than sent.
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            if let rejection = check(position: kept.count, since: entry.since, deadline: entry.deadline, now: now) {
                output.rejections.append((entry.waiter, rejection))
            } else {
                kept.append(entry)
            }
        }
        entries = kept
        var sent = 0
        while sent < entries.count, let ticket = take(now) {
            let entry = entries[sent]
            output.sends.append((entry.waiter, ticket, now - entry.since))
            sent += 1
        }
        entries.removeFirst(sent)
        output.scheduleTick = tickToSchedule(now: now)
        return output
    }

    /// Starts a new window when `resetAt` has passed.
    private mutating func roll(_ now: Duration) {
        guard let reset = resetAt, now >= reset else { return }
        epoch += 1
        carried = inFlight
        guard let limit, limit > 0 else {
            // Only a Retry-After was known, or the server's limit is 0 (a quota that never comes back by
            // itself): probe again, and let the server's next answer decide.
            remaining = nil
            resetAt = nil
            return
        }
        guard isFromServer else {
            // A client-side window starts with its first request.
            remaining = limit
            resetAt = nil
            sentInWindow = 0
            return
        }
        remaining = max(0, limit - carried)
        sentInWindow = carried
        if let window, window > .zero {
            // Windows passed since the reset. A window of a few attoseconds (`w=1e-18`) can make that more than
            // an Int holds: past 2^31 windows, the next one simply starts a window from now.
            let passed = min(NetworkNumber.int(((now - reset) / window).rounded(.down)), Int(Int32.max))
            let next = reset + window * (passed + 1)
            resetAt = next > now ? next : now + window
        } else {
            resetAt = nil
        }
    }

    /// Lets one request through if the quota allows.
    private mutating func take(_ now: Duration) -> Ticket? {
        if let heldUntil {
            guard now >= heldUntil else { return nil }
            self.heldUntil = nil
        }
        if isUnlimited {
            inFlight += 1
            return Ticket(epoch: epoch, isProbe: false)
        }
        guard let left = remaining else {
            guard !isProbeInFlight else { return nil }
            isProbeInFlight = true
            inFlight += 1
            return Ticket(epoch: epoch, isProbe: true)
        }
        guard left > 0 else { return nil }
        remaining = left - 1
        sentInWindow += 1
        if resetAt == nil, !isFromServer, let clientWindow = settings.clientWindow {
            resetAt = now + clientWindow
        }
        inFlight += 1
        return Ticket(epoch: epoch, isProbe: false)
    }

    /// Brings the quota in line with what a response said.
    private mutating func apply(_ observation: RateLimitObservation, now: Duration, wasCarried: Bool) {
        let wasFromServer = isFromServer
        if observation.isThrottled, !wasFromServer, settings.clientLimit != nil, observation.remaining == nil,
            observation.limit == nil
        {
            // A refusal without numbers under the client-side limit (a deploy's 503, a proxy's 429): wait as long
            // as it asks, then go on in the client's window; the limit the user set is still the only one known.
            let until = now + (observation.retryAfter ?? observation.reset ?? settings.fallbackDelay)
            heldUntil = max(heldUntil ?? until, until)
            return
        }
        isFromServer = true
        isUnlimited = false
        if let newLimit = observation.limit {
            limit = newLimit
        } else if !wasFromServer {
            limit = nil
        }
        if let newWindow = observation.window {
            window = newWindow
        } else if !wasFromServer {
            window = nil
        }
        if observation.isThrottled {
            let until = now + (observation.retryAfter ?? observation.reset ?? settings.fallbackDelay)
            remaining = 0
            resetAt = max(resetAt ?? until, until)
            return
        }
        guard let reported = observation.remaining else { return }
        // Assumes every request still in flight is yet to be counted: never too many, but too few when some
        // have been counted already, so it is used only where it must be.
        let serverRemaining = max(0, reported - inFlight)
        let serverReset = observation.reset.map { now + $0 }
        // Resets are whole seconds, measured from when the server answered: responses of one window disagree
        // by up to a second plus the spread of response latencies. Half a window apart is another window.
        let tolerance = window.map { max(.seconds(1), $0 / 2) } ?? .seconds(1)
        guard wasFromServer, let current = remaining else {
            remaining = serverRemaining
            resetAt = serverReset
            sentInWindow = inFlight + 1
            capRemaining()
            return
        }
        if let serverReset, resetAt.map({ serverReset > $0 + tolerance }) ?? true {
            // A later window than ours: the requests in flight may count in it (hence `- inFlight` above);
            // those that come back showing the earlier window give their slots back.
            epoch += 1
            carried = inFlight
            remaining = serverRemaining
            resetAt = serverReset
            sentInWindow = inFlight + 1
        } else if let serverReset, let ours = resetAt, serverReset < ours - tolerance {
            // A late response from an earlier window: a request sent then was counted then.
            if wasCarried {
                remaining = current + 1
                sentInWindow -= 1
            }
        } else {
            if let limit, limit - reported <= sentInWindow {
                // The server has counted no more than our own requests could be: our count is exact (theirs
                // is older, or does not yet include requests in flight). Otherwise someone else uses the
                // quota too, and the cautious estimate applies.
            } else {
                remaining = min(current, serverRemaining)
            }
            if let serverReset { resetAt = max(resetAt ?? serverReset, serverReset) }
        }
        capRemaining()
    }

    private mutating func capRemaining() {
        if let limit, let left = remaining, left > limit { remaining = limit }
    }

    /// When the waiter at `position` in the queue can expect its slot, if that is known.
    private func opening(position: Int, now: Duration) -> Duration? {
        if let heldUntil, heldUntil > now {
            // The quota as it will stand when the hold ends: a window that ends during the hold has rolled by then.
            var rolled = self
            rolled.heldUntil = nil
            rolled.roll(heldUntil)
            return rolled.opening(position: position, now: heldUntil).map { max($0, heldUntil) }
        }
        if isUnlimited { return now }
        guard let left = remaining else { return nil }
        if position < left { return now }
        guard let resetAt else {
            // A client window not started yet starts with the next request, now; each window after it lets `limit`
            // more go.
            guard !isFromServer, settings.clientLimit != nil, let window, let limit, limit > 0 else { return nil }
            return now + window * ((position - left) / limit + 1)
        }
        let after = position - left
        guard let limit, limit > 0 else { return after == 0 ? resetAt : nil }
        let windows = after / limit
        if windows == 0 { return resetAt }
        guard let window else { return nil }
        return resetAt + window * windows
    }

    /// Whether the waiter at `position`, waiting since `since`, must be refused now.
    private func check(position: Int, since: Duration, deadline: Duration?, now: Duration) -> Rejection? {
        if let maximum = settings.maximumQueueLength, position >= maximum { return .queueFull(maximum: maximum) }
        let opens = opening(position: position, now: now)
        if let deadline, now >= deadline || (opens.map { $0 >= deadline } ?? false) {
            return .pastDeadline(opensIn: opens.map { $0 - now })
        }
        if let maximum = settings.maximumWait {
            if now - since >= maximum, opens.map({ $0 > now }) ?? true {
                return .waitTooLong(opensIn: opens.map { $0 - now }, maximum: maximum)
            }
            if let opens, opens - since > maximum { return .waitTooLong(opensIn: opens - now, maximum: maximum) }
        }
        return nil
    }

    /// The next time a tick is needed (a window opens, a deadline or maximum wait passes), unless an earlier
    /// or equal one is already scheduled.
    private mutating func tickToSchedule(now: Duration) -> Duration? {
        guard !entries.isEmpty else { return nil }
        // The earliest arrival, not the head's: a request that waited for the fleet's window comes back to the
        // queue with its first arrival, earlier than those of the waiters ahead of it.
        let candidates = [
            resetAt,
            heldUntil,
            settings.maximumWait.flatMap { maximum in entries.lazy.map(\.since).min().map { $0 + maximum } },
            entries.lazy.compactMap(\.deadline).min(),
        ]
        guard let wake = candidates.lazy.compactMap({ $0 }).filter({ $0 > now }).min() else { return nil }
        if let scheduledTick, scheduledTick > now, scheduledTick <= wake { return nil }
        scheduledTick = wake
        return wake
    }
}
