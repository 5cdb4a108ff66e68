/// A ``SharedTokenStore`` in the process's memory: for several ``TokenRefresher``s in one process (replicas in
/// a test, or one refresher per worker) and as the model a store of another kind must behave like.
///
/// Leases are measured on the injected clock (a manual clock in tests). Waiters are woken by every change;
/// a waiter whose timeout passes returns then, on that clock.
public final class InMemorySharedTokenStore<C: Clock<Duration>>: SharedTokenStore {
    private struct Waiter {
        let version: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var token: SharedToken?
        var holder: String?
        var leaseEnds: C.Instant?
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        /// How many leases were taken: a test reads it as how many refreshes began in the fleet.
        var leasesTaken = 0

        var version: Int { token?.version ?? 0 }

        func isLeased(at now: C.Instant) -> Bool {
            guard holder != nil, let leaseEnds else { return false }
            return now < leaseEnds
        }

        /// Removes and returns the waiters a change lets go: all of them when the lease is free or the version
        /// moved past theirs.
        mutating func wake(now: C.Instant) -> [CheckedContinuation<Void, Never>] {
            let leased = isLeased(at: now)
            let woken = waiters.filter { !leased || version > $0.value.version }
            for id in woken.keys { waiters[id] = nil }
            return woken.values.map(\.continuation)
        }
    }

    private let clock: C
    private let state: LockedState<State>
    /// The stored token and its refresh token, kept registered (see ``Redaction/registerSecret(_:)``) while they
    /// are stored.
    private let currentSecrets = HeldSecrets()

    /// Creates a store holding `token`, or nothing.
    ///
    /// - Parameters:
    ///   - token: The token to start with; its version is taken as given (1 when in doubt).
    ///   - clock: The clock leases are measured on.
    public init(token: SharedToken? = nil, clock: C) {
        self.clock = clock
        self.state = LockedState(State(token: token))
        if let token {
            Self.register(token)
            currentSecrets.hold(token.value, token.refreshToken, version: token.version)
        }
    }

    /// How many refresh leases were taken since the store was made.
    public var leasesTaken: Int { state.withLock { $0.leasesTaken } }

    /// Who holds the lease now, if its lease has not expired.
    public var leaseHolder: String? {
        let now = clock.now
        return state.withLock { $0.isLeased(at: now) ? $0.holder : nil }
    }

    /// When the current lease ends (or ended: an expired lease is kept until another holder takes it), or `nil`
    /// when none was taken or it was released.
    public var leaseEnds: C.Instant? { state.withLock { $0.holder == nil ? nil : $0.leaseEnds } }

    /// How many callers wait for a change.
    public var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// The current token, or `nil`.
    public func token() async -> SharedToken? {
        state.withLock { $0.token }
    }

    /// Takes the lease unless a newer version is stored or another holder's lease is running.
    public func beginRefresh(after version: Int, holder: String, lease: Duration) async -> SharedRefreshLease {
        let now = clock.now
        return state.withLock { state in
            if let token = state.token, token.version > version { return .newer(token) }
            if state.isLeased(at: now), state.holder != holder, let ends = state.leaseEnds {
                return .held(expiresIn: now.duration(to: ends))
            }
            state.holder = holder
            state.leaseEnds = now.advanced(by: lease)
            state.leasesTaken += 1
            return .acquired(state.token)
        }
    }

    /// Extends `holder`'s lease to `lease` from now if `holder` holds it (or held it last and nobody took it).
    public func renewLease(holder: String, lease: Duration) async -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard state.holder == holder else { return false }
            state.leaseEnds = now.advanced(by: lease)
            return true
        }
    }

    /// Stores `token` if it is the next version, releases `holder`'s lease, and wakes the waiters.
    @discardableResult
    public func finishRefresh(_ token: SharedToken?, holder: String) async -> SharedToken? {
        if let token { Self.register(token) }
        let now = clock.now
        let (current, woken) = state.withLock { state in
            if let token, token.version == state.version + 1 { state.token = token }
            if state.holder == holder {
                state.holder = nil
                state.leaseEnds = nil
            }
            return (state.token, state.wake(now: now))
        }
        // Outside the lock (the registry has its own); by version, so two calls cannot leave the older held.
        if let current { currentSecrets.hold(current.value, current.refreshToken, version: current.version) }
        for continuation in woken { continuation.resume() }
        return current
    }

    /// Stores `token` as the next version and wakes the waiters.
    public func replaceToken(_ token: SharedToken) async -> SharedToken {
        Self.register(token)
        let now = clock.now
        let (stored, woken) = state.withLock { state in
            var stored = token
            stored.version = state.version + 1
            state.token = stored
            return (stored, state.wake(now: now))
        }
        currentSecrets.hold(stored.value, stored.refreshToken, version: stored.version)
        for continuation in woken { continuation.resume() }
        return stored
    }

    /// Returns when the version passes `version` or the lease is free, or after `timeout` on the store's clock.
    public func waitForChange(after version: Int, timeout: Duration) async throws {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let deadline = clock.now.advanced(by: timeout)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in try await clock.sleep(until: deadline, tolerance: nil) }
            group.addTask { await self.change(after: version, id: id) }
            defer { group.cancelAll() }
            do {
                try await group.next()
            } catch is CancellationError {
                // The sleep ends early only when the wait is cancelled, which ends the other child too.
            }
        }
        try Task.checkCancellation()
    }

    private func change(after version: Int, id: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = clock.now
                let ready = state.withLock { state in
                    if Task.isCancelled || state.version > version || !state.isLeased(at: now) { return true }
                    state.waiters[id] = Waiter(version: version, continuation: continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    private static func register(_ token: SharedToken) {
        Redaction.registerSecret(token.value)
        if let refreshToken = token.refreshToken { Redaction.registerSecret(refreshToken) }
    }
}

extension InMemorySharedTokenStore where C == ContinuousClock {
    /// Creates a store holding `token`, or nothing, with leases measured on the continuous clock.
    public convenience init(token: SharedToken? = nil) {
        self.init(token: token, clock: ContinuousClock())
    }
}
