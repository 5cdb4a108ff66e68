/// The state of a ``TokenRefresher``, as a value: each event goes in, what to do comes out.
///
/// Time is a `Duration` since the refresher's clock started, so the machine does not depend on a clock type and
/// tests drive it with plain values. The refresher keeps the machine under a lock and carries out its actions
/// (running the refresh closure, resuming waiters) outside it.
///
/// The rules:
/// - **Newer only.** A waiter that was rejected with version `n` is only ever handed a credential whose version
///   is greater than `n`, or an error. If the current version is already greater, it gets it at once.
/// - **One refresh at a time.** A waiter whose version is the current one joins the refresh in progress, or
///   starts one (within ``TokenRefresher/RefreshLimit``). If the refresh in progress replaces an *older* version
///   (a token was stored with `setToken` meanwhile, and that one was rejected too), the waiter waits for it to
///   end; then one refresh of the current version starts for every such waiter. Never two refreshes at once:
///   a refresh closure may rotate a one-time refresh token.
/// - **A token set replaces everything.** `setToken` stores the next version and hands it at once to every
///   waiter, all of which were rejected with an older one; the refresh in progress goes on, and its result is
///   dropped.
/// - **A failure ends a wave.** A failed refresh of the current version fails its waiters with one error, and
///   requests that read that version before the failure get the same error instead of starting another
///   refresh; a refresh whose result is dropped fails nobody.
/// - **Usable on arrival.** A token with a lifetime is refreshed before sending once `min(leeway, lifetime / 2)`
///   is left of it; see ``TokenRefresher/leeway`` for why.
struct TokenRefresherStateMachine: Sendable {
    /// The current token, with what the middleware needs to decide without asking the machine again.
    struct Credential: Sendable, Equatable {
        var value: String
        var version: Int
        /// When the token expires; `nil` when unknown.
        var expiresAt: Duration?
        /// From when it is refreshed before sending; `nil` when only a rejection refreshes it.
        var refreshAt: Duration?
        /// How many refreshes have failed so far; a request compares it to detect a failure since it read the
        /// credential.
        var failedRefreshes: Int
        /// The secret the refresh closure needs (an OAuth refresh token), if the token came with one.
        var refreshToken: String? = nil
        /// The version a ``SharedTokenStore`` gave this token; 0 when it did not come from one.
        var sharedVersion = 0
    }

    /// What to do for a caller that needs a credential newer than the one it holds.
    enum Decision: Sendable {
        /// Use this credential: it is newer.
        case use(Credential)
        /// Fail with this error (the failure of this version's refresh, or the refresh limit).
        case fail(CourierError)
        /// The caller is a waiter now; it is resumed by a later event.
        case wait
        /// The caller is a waiter now, and a refresh of this credential starts: run the refresh closure.
        case waitAndStart(Credential)
        /// The caller would have to wait, but it is the refresh closure itself: it would wait forever.
        case waitingForItself
    }

    /// What to do when a refresh ends or a token is stored.
    struct Resumption: Sendable {
        /// The waiters to resume, each with its outcome, in the order they started waiting.
        var resume: [(waiter: Int, outcome: Result<Credential, CourierError>)] = []
        /// A refresh of this credential starts: run the refresh closure.
        var start: Credential?
    }

    let leeway: Duration
    let limit: TokenRefresher.RefreshLimit
    private(set) var credential: Credential
    /// The version that the refresh in progress replaces; `nil` when none runs.
    private(set) var refreshing: Int?
    /// How many refreshes have started (successful or not).
    private(set) var refreshesStarted = 0
    /// The waiters, by id, each with the version it needs something newer than.
    private var waiters: [Int: Int] = [:]
    private var recentRefreshStarts: [Duration] = []
    private var lastFailure: CourierError?

    /// Creates the machine at time zero with the token to start with.
    ///
    /// Unlike a token received later, an initial token with no time left (`expiresIn <= 0`) is refreshed before
    /// its first use: it was kept from an earlier run and expired meanwhile. So is a token that cannot be sent
    /// (empty, or with CR, LF or NUL), at start or set later.
    init(token: TokenRefresher.Token, leeway: Duration, limit: TokenRefresher.RefreshLimit) {
        self.leeway = leeway
        self.limit = limit
        let refreshAt: Duration? =
            if !Self.isUsable(token.value) { .zero } else if let lifetime = token.expiresIn, lifetime <= .zero {
                lifetime
            } else {
                Self.refreshTime(lifetime: token.expiresIn, storedAt: .zero, leeway: leeway)
            }
        credential = Credential(
            value: token.value,
            version: 1,
            expiresAt: token.expiresIn,
            refreshAt: refreshAt,
            failedRefreshes: 0,
            refreshToken: token.refreshToken
        )
    }

    /// How many callers are waiting.
    var waiterCount: Int { waiters.count }

    /// When a token received at `now` with `lifetime` is refreshed before sending: once `min(leeway, lifetime / 2)`
    /// is left; never for a token with no known lifetime or none left (it is used until the server rejects it).
    static func refreshTime(lifetime: Duration?, storedAt now: Duration, leeway: Duration) -> Duration? {
        guard let lifetime, lifetime > .zero else { return nil }
        return now + lifetime - min(leeway, lifetime / 2)
    }

    /// Whether `credential` is due for a refresh before sending at `now`.
    static func isExpiring(_ credential: Credential, now: Duration) -> Bool {
        guard let refreshAt = credential.refreshAt else { return false }
        return now >= refreshAt
    }

    // MARK: Events

    /// A caller holding `stale` needs a newer credential (it was rejected, or `stale` is due for a refresh).
    ///
    /// - Parameters:
    ///   - stale: The credential the caller holds.
    ///   - waiter: The id under which the caller waits, if it must.
    ///   - isRefreshClosure: Whether the caller runs inside this refresher's refresh closure.
    /// - Returns: What the caller does next; for `.wait` and `.waitAndStart` it is registered as `waiter`.
    mutating func newerCredential(
        than stale: Credential,
        waiter: Int,
        isRefreshClosure: Bool,
        now: Duration
    ) -> Decision {
        if credential.version > stale.version { return .use(credential) }
        if credential.failedRefreshes > stale.failedRefreshes, let lastFailure {
            // A refresh of this very version failed after the caller read it: same wave, same error.
            return .fail(lastFailure)
        }
        if isRefreshClosure { return .waitingForItself }
        if refreshing != nil {
            // Joins the refresh of this version, or waits for the refresh of an older one to end.
            waiters[waiter] = stale.version
            return .wait
        }
        switch startRefresh(now: now) {
        case .failure(let error):
            return .fail(error)
        case .success(let replaced):
            waiters[waiter] = stale.version
            return .waitAndStart(replaced)
        }
    }

    /// A waiter's task was cancelled; returns whether it was still waiting (and must be resumed by the caller).
    mutating func cancel(waiter: Int) -> Bool {
        waiters.removeValue(forKey: waiter) != nil
    }

    /// The refresh in progress ended with `result` at `now`; a token from a ``SharedTokenStore`` comes with its
    /// `sharedVersion`.
    mutating func finishRefresh(
        _ result: Result<TokenRefresher.Token, any Error>,
        sharedVersion: Int = 0,
        now: Duration
    ) -> Resumption {
        guard let replacing = refreshing else { return Resumption() }
        refreshing = nil
        guard credential.version == replacing else {
            // A token stored with setToken(_:) during the refresh wins: the result, even a failure, is dropped.
            return resolveWaiters(now: now)
        }
        let failure: CourierError
        switch result {
        case .success(let token) where Self.isUsable(token.value):
            store(token, sharedVersion: sharedVersion, now: now)
            return resolveWaiters(now: now)
        case .success:
            failure = CourierError(.refreshFailed, message: "the refreshed token is empty or contains CR, LF or NUL")
        case .failure(let error):
            failure = CourierError(.refreshFailed, message: "refreshing the credential failed", underlying: error)
        }
        lastFailure = failure
        credential.failedRefreshes += 1
        // Every waiter was rejected with (or found due) the version that failed to refresh.
        let failed = waiters.keys.sorted().map {
            (waiter: $0, outcome: Result<Credential, CourierError>.failure(failure))
        }
        waiters = [:]
        return Resumption(resume: failed)
    }

    /// A token obtained elsewhere is stored at `now` as the next version; every waiter gets it.
    mutating func setToken(_ token: TokenRefresher.Token, sharedVersion: Int = 0, now: Duration) -> Resumption {
        store(token, sharedVersion: sharedVersion, now: now)
        return resolveWaiters(now: now)
    }

    /// The current token was stored in a ``SharedTokenStore`` as `version` (after ``setToken(_:sharedVersion:now:)``).
    mutating func adoptSharedVersion(_ version: Int) {
        credential.sharedVersion = version
    }

    // MARK: Helpers

    private mutating func store(_ token: TokenRefresher.Token, sharedVersion: Int, now: Duration) {
        credential.value = token.value
        credential.refreshToken = token.refreshToken
        credential.sharedVersion = sharedVersion
        credential.version += 1
        credential.expiresAt = token.expiresIn.map { now + $0 }
        // A token that cannot be sent (empty, or with CR, LF or NUL: from configuration, say) is refreshed first.
        credential.refreshAt =
            Self.isUsable(token.value)
            ? Self.refreshTime(lifetime: token.expiresIn, storedAt: now, leeway: leeway) : now
    }

    /// Hands the current credential to every waiter that holds an older one; if some hold the current one (it
    /// was rejected while a refresh of an older one ran), starts one refresh of it for them.
    private mutating func resolveWaiters(now: Duration) -> Resumption {
        var resumption = Resumption()
        var stillWaiting: [Int: Int] = [:]
        for (waiter, version) in waiters.sorted(by: { $0.key < $1.key }) {
            if credential.version > version {
                resumption.resume.append((waiter, .success(credential)))
            } else {
                stillWaiting[waiter] = version
            }
        }
        waiters = stillWaiting
        guard !stillWaiting.isEmpty, refreshing == nil else { return resumption }
        switch startRefresh(now: now) {
        case .success(let replaced):
            resumption.start = replaced
        case .failure(let error):
            resumption.resume += stillWaiting.keys.sorted().map { ($0, .failure(error)) }
            waiters = [:]
        }
        return resumption
    }

    private mutating func startRefresh(now: Duration) -> Result<Credential, CourierError> {
        let window = limit.window
        recentRefreshStarts.removeAll { now - $0 >= window }
        guard recentRefreshStarts.count < limit.maximum else {
            return .failure(
                CourierError(
                    .tooManyRefreshes,
                    message: "\(limit.maximum) credential refreshes already started within \(limit.window)"
                )
            )
        }
        recentRefreshStarts.append(now)
        refreshesStarted += 1
        refreshing = credential.version
        return .success(credential)
    }

    static func isUsable(_ value: String) -> Bool {
        !value.isEmpty && !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
