/// Holds an expiring credential and refreshes it: once for any number of concurrent failures, in a task
/// that no caller can cancel, within a budget of refreshes per time window.
///
/// Use it with ``Middleware/authenticating(with:scheme:failure:origins:)``:
///
/// ```swift
/// let auth = TokenRefresher(token: .init(storedToken, expiresIn: .seconds(3600))) { rejected in
///     let reply: TokenReply = try await client.send(
///         .post("/oauth/token", body: .form(["grant_type": "refresh_token", "refresh_token": refreshToken]))
///     )
///     return .init(reply.accessToken, expiresIn: .seconds(reply.expiresIn))
/// }
/// await client.update { $0.middleware.append(.authenticating(with: auth)) }
/// ```
///
/// **What it guarantees.**
/// - **One refresh at a time.** However many requests fail with the same token, one refresh runs; every
///   one of them waits for it and retries once with the new token.
/// - **Versions.** Every stored token gets a ``version`` one higher than the last. A request that was
///   rejected with an older version than the current one retries with the current token and does not
///   refresh again (the stale-token race). A rejected request is only ever handed a **newer** token than the
///   one rejected, never the same one again: if a refresh of an older token is still running (the current one
///   was stored with ``setToken(_:)`` meanwhile, and rejected too), it waits for that refresh to end, then one
///   refresh of the current token runs for every such request. Refreshes never overlap, so a refresh closure
///   may use a refresh token that the server rotates.
/// - **The refresh belongs to the refresher.** It runs in a task of its own, so a caller that is cancelled
///   while waiting stops waiting at once (it throws `CancellationError`), and the refresh goes on and
///   stores its token for everybody else.
/// - **Preemptive refresh.** A token with an expiry is refreshed before sending once `min(leeway, lifetime / 2)`
///   is left of it, instead of after a rejection, so a token just received is always usable however short
///   its life (see ``leeway``, also for a token that arrives already expired). Time is read from the injected
///   clock.
/// - **Failure.** A failed refresh fails every waiter promptly with the same
///   ``CourierError/Code/refreshFailed`` error (its ``CourierError/underlying`` is what `refresh` threw).
///   Requests that were already sent with the failed token get that error too instead of starting another
///   refresh; a request sent afterwards may start a fresh one. Nothing is left poisoned.
/// - **Loop guard.** The middleware refreshes and retries a request at most once; more than
///   ``RefreshLimit/maximum`` refreshes within ``RefreshLimit/window`` fail fast with
///   ``CourierError/Code/tooManyRefreshes``, without calling `refresh`.
/// - **Refreshing through the same client.** While `refresh` runs, the authenticating middleware of this
///   refresher lets requests through untouched: it adds no credential, never waits for a refresh and never
///   counts a retry. So `refresh` may send its token request through the very client it authenticates,
///   without deadlocking. This is carried by a task-local value, so it covers everything `refresh` awaits
///   and the child tasks and `Task { }`s it creates, but not `Task.detached`.
/// - **Tests see the refresh.** The refresh task keeps the task-local values of the caller that started it, so
///   a test's transport (the `.mockTransport` trait, `TestTransport`) reaches a client that `refresh` calls,
///   and `ManualClock.run` counts its work: time does not move to a timeout while a refresh is running.
///
/// **Cost.** The current token lives in a mutex, so the middleware reads it synchronously: a request whose
/// token is valid never awaits anything. Only rejections and refreshes wait, on a continuation, without an
/// actor hop.
///
/// The token's value never appears in a description, an error or a log record: every token it stores is
/// registered with ``Redaction/registerSecret(_:)``.
public actor TokenRefresher {
    /// A credential's value and, optionally, how long it stays valid.
    public struct Token: Sendable, Hashable, CustomStringConvertible {
        /// The credential, for example an OAuth access token.
        public var value: String
        /// How long the token stays valid from the moment it is stored (or, when read back from
        /// ``TokenRefresher/token``, from now), or `nil` when it has no known expiry.
        public var expiresIn: Duration?
        /// The secret the refresh closure needs to get the next token, for example an OAuth refresh token, or
        /// `nil`. The refresher hands it back in the token the closure replaces, and a fleet shares it with
        /// the token (see ``TokenRefresher/Sharing``), so a rotated refresh token is never used twice.
        /// Redacted like the value.
        public var refreshToken: String?

        /// - Parameters:
        ///   - value: The credential.
        ///   - expiresIn: How long it stays valid, for example the `expires_in` of an OAuth reply; `nil` when
        ///     unknown (it is then only refreshed after the server rejects it).
        ///   - refreshToken: What the refresh closure needs to get the next token, if anything.
        public init(_ value: String, expiresIn: Duration? = nil, refreshToken: String? = nil) {
            self.value = value
            self.expiresIn = expiresIn
            self.refreshToken = refreshToken
        }

        /// `Token(<redacted>)`, with the expiry if there is one; never the value.
        public var description: String {
            if let expiresIn { return "Token(\(Redaction.placeholder), expires in \(expiresIn))" }
            return "Token(\(Redaction.placeholder))"
        }
    }

    /// How many refreshes may start within a sliding time window.
    public struct RefreshLimit: Sendable, Hashable {
        /// The most refreshes that may start within ``window``.
        public var maximum: Int
        /// The length of the window.
        public var window: Duration

        /// - Parameters:
        ///   - maximum: The most refreshes within `window`; at least 1.
        ///   - window: The length of the window; greater than zero.
        public init(maximum: Int, per window: Duration) {
            precondition(maximum >= 1, "a refresh limit must allow at least one refresh")
            precondition(window > .zero, "a refresh limit's window must be longer than zero")
            self.maximum = maximum
            self.window = window
        }

        /// Five refreshes within 30 seconds.
        public static let `default` = RefreshLimit(maximum: 5, per: .seconds(30))
    }

    /// The current token, as the middleware reads it without awaiting the actor.
    typealias Credential = TokenRefresherStateMachine.Credential

    private typealias Decision = TokenRefresherStateMachine.Decision

    /// Everything that changes, under one lock: the state machine, the continuations of its waiters and the ids
    /// they wait under.
    ///
    /// The actor itself holds no state (its members are `nonisolated`): it is an actor for its place in the
    /// public contract, and so that `await refresher.setToken(_:)` reads like the other calls. The task-local
    /// ``refreshing`` is not state either: it marks the tasks running a refresh closure.
    private struct Storage {
        var machine: TokenRefresherStateMachine
        var continuations: [Int: CheckedContinuation<Credential, any Error>] = [:]
        var lastWaiter = 0
        /// Called after every change a test may wait for (a waiter added, a refresh ended); `nil` outside tests.
        var observer: (@Sendable () -> Void)?
    }

    /// How long before its expiry a token is refreshed before sending, at most: a token is refreshed once
    /// `min(leeway, lifetime / 2)` is left of the lifetime it arrived with.
    ///
    /// The leeway covers the time a request takes to reach the server and clock differences, so a token is not
    /// sent just as it expires. Capped at half the lifetime, a token just received is always usable, and
    /// refreshes before sending come at most once per half lifetime, however short: with the default 30 s, a 1 h
    /// token is refreshed after 59 min 30 s, a 60 s token after 30 s, a 30 s token after 15 s, a 1 s token after
    /// 0.5 s (such short lifetimes may need a larger ``limit``). Without the cap, a token living no longer than
    /// the leeway would be refreshed before every request until ``CourierError/Code/tooManyRefreshes``.
    ///
    /// A token that arrives with no time left (`expiresIn` zero or negative, from a refresh or ``setToken(_:)``;
    /// usually a clock or unit mismatch) is not refreshed before sending: it is used until the server rejects
    /// it, because refreshing it at once would bring another such token, again and again. Only the token the
    /// refresher starts with is refreshed before its first use when it has no time left: it was kept from an
    /// earlier run and expired meanwhile.
    public nonisolated let leeway: Duration
    /// The limit on refreshes per time window.
    public nonisolated let limit: RefreshLimit

    /// How this refresher shares its token with other replicas, or `nil` (the default): then it refreshes on
    /// its own.
    public nonisolated let sharing: Sharing?

    private nonisolated let storage: LockedState<Storage>
    /// Who this refresher is in the shared store's lease: ``Sharing/holder`` with a suffix of its own, so that
    /// two refreshers made with one ``Sharing`` value are two holders, not one that holds the lease twice.
    nonisolated let sharedHolder: String
    /// The token this refresher obtained that the shared store has not taken yet, and whether a task is
    /// publishing it.
    nonisolated let publication = LockedState(Publication())
    nonisolated let elapsed: @Sendable () -> Duration
    /// Sleeps for a duration on the refresher's clock: the store's time limit.
    nonisolated let sleep: @Sendable (Duration) async throws -> Void
    nonisolated let operation: @Sendable (Token) async throws -> Token
    /// The current token and its refresh token, kept registered (see ``Redaction/registerSecret(_:)``) for as
    /// long as they are current, however many other values are registered meanwhile.
    nonisolated let currentSecrets = HeldSecrets()

    /// - Parameters:
    ///   - token: The token to start with, for example one kept from the last run. If its `expiresIn` is zero or
    ///     negative, it is refreshed before its first use.
    ///   - leeway: How long before its expiry a token is refreshed before sending, at most half its lifetime
    ///     (see ``leeway``).
    ///   - limit: The most refreshes within a time window; more fail with
    ///     ``CourierError/Code/tooManyRefreshes``.
    ///   - clock: The clock for expiry and for the refresh window; tests pass a manual clock.
    ///   - sharing: A store the replicas of a fleet share the token and its refreshes through, or `nil` (the
    ///     default) to refresh on its own (see ``Sharing``).
    ///   - refresh: Gets a new token. It receives the token being replaced (rejected by the server, or
    ///     about to expire). It runs in a task owned by the refresher and is never cancelled by a caller.
    ///     It may send requests through the client that this refresher authenticates.
    public init(
        token: Token,
        leeway: Duration = .seconds(30),
        limit: RefreshLimit = .default,
        clock: some Clock<Duration> = ContinuousClock(),
        sharing: Sharing? = nil,
        refresh: @escaping @Sendable (_ replaced: Token) async throws -> Token
    ) {
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.sleep = { try await clock.sleep(until: clock.now.advanced(by: $0), tolerance: nil) }
        self.leeway = leeway
        self.limit = limit
        self.sharing = sharing
        self.sharedHolder = "\(sharing?.holder ?? "local")/\(UInt64.random(in: .min ... .max))"
        self.operation = refresh
        Self.registerSecrets(of: token)
        currentSecrets.hold(token.value, token.refreshToken, version: 1)
        self.storage = LockedState(
            Storage(machine: TokenRefresherStateMachine(token: token, leeway: leeway, limit: limit))
        )
    }

    // MARK: Reading

    /// The current token; its ``Token/expiresIn`` is the time left from now.
    public nonisolated var token: Token {
        token(from: credential)
    }

    /// The current token's version: 1 for the first token, one more for every token stored since.
    public nonisolated var version: Int {
        credential.version
    }

    /// How many refreshes have started (successful or not).
    public nonisolated var refreshCount: Int {
        storage.withLock { $0.machine.refreshesStarted }
    }

    nonisolated var credential: Credential {
        storage.withLock { $0.machine.credential }
    }

    /// Whether `credential` is due for a refresh before sending (see ``leeway``).
    nonisolated func isExpiring(_ credential: Credential) -> Bool {
        guard credential.refreshAt != nil else { return false }
        return TokenRefresherStateMachine.isExpiring(credential, now: elapsed())
    }

    /// Whether `credential` has not expired yet (a token with no known expiry never does): it may still be sent
    /// when its early refresh fails.
    nonisolated func isUnexpired(_ credential: Credential) -> Bool {
        guard let expiresAt = credential.expiresAt else { return true }
        return elapsed() < expiresAt
    }

    /// The credential to send now: `credential`, or a newer one when it is due for an early refresh. When that
    /// refresh fails (the token server is down, or the refresh limit is reached) and `credential` has not
    /// expired, `credential` is still sent: the failure reaches callers once the token has expired, not before.
    nonisolated func credentialToSend(_ credential: Credential) async throws -> Credential {
        guard isExpiring(credential) else { return credential }
        do {
            return try await newerCredential(than: credential)
        } catch let error as CourierError {
            // A token that cannot be sent (empty, or with CR, LF or NUL) is never sent in the meantime.
            guard isUnexpired(credential), TokenRefresherStateMachine.isUsable(credential.value) else { throw error }
            return credential
        }
    }

    private nonisolated func token(from credential: Credential) -> Token {
        Token(
            credential.value,
            expiresIn: credential.expiresAt.map { $0 - elapsed() },
            refreshToken: credential.refreshToken
        )
    }

    static func registerSecrets(of token: Token) {
        Redaction.registerSecret(token.value)
        if let refreshToken = token.refreshToken { Redaction.registerSecret(refreshToken) }
    }

    // MARK: Using

    /// Returns the current token, refreshed first if it is due (see ``leeway``).
    ///
    /// For code that needs the credential outside a ``Client``, for example to open a WebSocket. When the early
    /// refresh fails but the token has not expired yet, the token is returned all the same.
    ///
    /// - Throws: ``CourierError/Code/refreshFailed``, ``CourierError/Code/tooManyRefreshes`` (once the token has
    ///   expired), or
    ///   `CancellationError` when the calling task is cancelled while waiting.
    public func validToken() async throws -> Token {
        token(from: try await credentialToSend(credential))
    }

    /// Refreshes the current token now, or joins the refresh of it in progress.
    ///
    /// - Returns: The new token (or a token stored with ``setToken(_:)`` meanwhile).
    /// - Throws: ``CourierError/Code/refreshFailed``, ``CourierError/Code/tooManyRefreshes``, or
    ///   `CancellationError` when the calling task is cancelled while waiting.
    @discardableResult
    public func refresh() async throws -> Token {
        token(from: try await newerCredential(than: self.credential))
    }

    /// Stores a token obtained elsewhere (for example after the user signs in again) as the next version.
    ///
    /// Everybody waiting for a refresh gets this token at once. A refresh in progress is not cancelled, but its
    /// result is dropped, and so is its failure. A token with no time left (`expiresIn` zero or negative) is used
    /// until the server rejects it (see ``leeway``). With ``sharing``, the token is then stored in the shared
    /// store as its next version, for the other replicas; when the store fails, the token is used here all the
    /// same, the failure is reported as ``Sharing/Event/storeFailed(operation:error:)``, and the token is stored
    /// when the store answers again (before the next refresh asks it anything); a caller cancelled while the
    /// store is asked stops waiting at once (the token is used here all the same).
    public func setToken(_ token: Token) async {
        Self.registerSecrets(of: token)
        let now = elapsed()
        perform(now: now) { $0.setToken(token, now: now) }
        guard let sharing else { return }
        let shared = Self.sharedToken(from: token, version: 0, sharing: sharing)
        do {
            let stored = try await timed(sharing, "replaceToken") { try await sharing.store.replaceToken(shared) }
            // Only while this token is still the current one and took no version from elsewhere meanwhile.
            adoptSharedVersion(stored.version, ifValue: token.value)
        } catch {
            sharing.onEvent?(.storeFailed(operation: "replaceToken", error: error))
            // Until the store takes it, the store offers the token it replaced to the other replicas, and to this
            // one's next refresh, which would otherwise adopt that one and drop this.
            keepUnpublished(Unpublished(token: shared, replaced: nil), sharing: sharing)
        }
    }

    /// Records that the current token is `version` in the shared store, if it is still `value` and came from
    /// nowhere else meanwhile.
    nonisolated func adoptSharedVersion(_ version: Int, ifValue value: String) {
        storage.withLock { storage in
            guard storage.machine.credential.value == value, storage.machine.credential.sharedVersion == 0 else {
                return
            }
            storage.machine.adoptSharedVersion(version)
        }
    }

    // MARK: Refreshing

    /// Returns a credential newer than `stale`: the current one if somebody already replaced `stale`,
    /// otherwise the result of a refresh (started here, or already in progress).
    ///
    /// Never `stale` again, nor an older one: a caller rejected with `stale` needs something else to send.
    nonisolated func newerCredential(than stale: Credential) async throws -> Credential {
        try Task.checkCancellation()
        // The stale-token race is settled without the machine when the token has already changed. The waiter id
        // is taken in the same section (and wasted then): the cancellation handler needs it before the waiter
        // registers.
        let (current, waiter) = storage.withLock { storage in
            storage.lastWaiter += 1
            return (storage.machine.credential, storage.lastWaiter)
        }
        if current.version > stale.version { return current }

        let isRefreshClosure = Self.isRefreshing(ObjectIdentifier(self))
        let now = elapsed()
        // The call's record (when a logging or timing layer keeps one) learns how long the caller waited.
        return try await CallRecord.measuring(.refresh) {
            try await waitForCredential(newerThan: stale, waiter: waiter, isRefreshClosure: isRefreshClosure, now: now)
        }
    }

    /// Waits, as a registered waiter, for the machine to hand a credential newer than `stale`.
    private nonisolated func waitForCredential(
        newerThan stale: Credential,
        waiter: Int,
        isRefreshClosure: Bool,
        now: Duration
    ) async throws -> Credential {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Credential, any Error>) in
                let (decision, observer) = storage.withLock { storage -> (Decision?, (@Sendable () -> Void)?) in
                    // Checked under the lock: `onCancel` takes the lock after the cancellation flag is set, so
                    // either it finds this waiter or this check sees the cancellation.
                    if Task.isCancelled { return (nil, nil) }
                    let decision = storage.machine.newerCredential(
                        than: stale,
                        waiter: waiter,
                        isRefreshClosure: isRefreshClosure,
                        now: now
                    )
                    switch decision {
                    case .wait, .waitAndStart: storage.continuations[waiter] = continuation
                    case .use, .fail, .waitingForItself: break
                    }
                    return (decision, storage.observer)
                }
                guard let decision else { return continuation.resume(throwing: CancellationError()) }
                switch decision {
                case .use(let credential):
                    continuation.resume(returning: credential)
                case .fail(let error):
                    continuation.resume(throwing: error)
                case .waitingForItself:
                    // The refresh closure itself is asking for a new token: waiting would wait for itself forever.
                    continuation.resume(
                        throwing: CourierError(
                            .refreshFailed,
                            message:
                                "the refresh closure asked its own refresher for a new token, which would never come"
                        )
                    )
                case .wait:
                    break
                case .waitAndStart(let replaced):
                    startRefresh(replacing: replaced, now: now)
                }
                observer?()
            }
        } onCancel: {
            let continuation = storage.withLock { storage in
                storage.machine.cancel(waiter: waiter) ? storage.continuations.removeValue(forKey: waiter) : nil
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Runs the refresh closure for `replaced` in a task of the refresher's own, which no caller can cancel. It is
    /// ``SharedWork``: it keeps the caller's task-local values (a test's transport) but none of Courier's per-call
    /// context (its deadline, its redirect hop), and the test kit's clock sees it.
    private nonisolated func startRefresh(replacing replaced: Credential, now: Duration) {
        let token = Token(
            replaced.value,
            expiresIn: replaced.expiresAt.map { $0 - now },
            refreshToken: replaced.refreshToken
        )
        let operation = self.operation
        // Requests sent by `refresh` pass through this refresher's middleware (and those of any refresher
        // whose refresh this one runs inside) untouched.
        let context = Self.refreshing + [ObjectIdentifier(self)]
        SharedWork.start(priority: Task.currentPriority) {
            await SharedWork.withoutCallContext {
                let result: Result<(Token, sharedVersion: Int), any Error>
                do {
                    result = .success(
                        try await Self.$refreshing.withValue(context) {
                            guard let sharing = self.sharing else { return (try await operation(token), 0) }
                            return try await self.sharedRefresh(
                                replacing: token,
                                sharedVersion: replaced.sharedVersion,
                                sharing: sharing
                            )
                        }
                    )
                } catch {
                    result = .failure(error)
                }
                self.finishRefresh(result)
            }
        }
    }

    private nonisolated func finishRefresh(_ result: Result<(Token, sharedVersion: Int), any Error>) {
        if case .success(let (token, _)) = result { Self.registerSecrets(of: token) }
        let now = elapsed()
        let sharedVersion = (try? result.get())?.sharedVersion ?? 0
        perform(now: now) { $0.finishRefresh(result.map(\.0), sharedVersion: sharedVersion, now: now) }
    }

    /// Applies an event to the machine under the lock, then carries out what it returns outside it.
    private nonisolated func perform(
        now: Duration,
        _ event: (inout TokenRefresherStateMachine) -> TokenRefresherStateMachine.Resumption
    ) {
        let (resumption, continuations, observer, current) = storage.withLock { storage in
            let resumption = event(&storage.machine)
            let continuations = resumption.resume.map { storage.continuations.removeValue(forKey: $0.waiter) }
            return (resumption, continuations, storage.observer, storage.machine.credential)
        }
        // Outside the lock (the registry has its own); by version, so two events cannot leave the older held.
        currentSecrets.hold(current.value, current.refreshToken, version: current.version)
        if let replaced = resumption.start {
            startRefresh(replacing: replaced, now: now)
        }
        for (continuation, resumed) in zip(continuations, resumption.resume) {
            continuation?.resume(with: resumed.outcome.mapError { $0 })
        }
        observer?()
    }

    // MARK: Observing (tests)

    /// How many callers are waiting for a refresh.
    nonisolated var waiterCount: Int {
        storage.withLock { $0.machine.waiterCount }
    }

    /// How many callers are waiting and whether a refresh is running, read together (a refresh that ends
    /// changes both at once).
    nonisolated var activity: (waiters: Int, isRefreshing: Bool) {
        storage.withLock { ($0.machine.waiterCount, $0.machine.refreshing != nil) }
    }

    /// Calls `observer` after every change a test may wait for: a caller starts waiting, a refresh ends, a token
    /// is stored.
    nonisolated func onChange(_ observer: @escaping @Sendable () -> Void) {
        storage.withLock { $0.observer = observer }
    }

    // MARK: Refresh context

    /// The refreshers whose `refresh` closure the current task is running inside.
    @TaskLocal static var refreshing: [ObjectIdentifier] = []

    /// Whether the current task is running inside the `refresh` closure of the refresher `id`.
    static func isRefreshing(_ id: ObjectIdentifier) -> Bool {
        let refreshing = Self.refreshing
        return !refreshing.isEmpty && refreshing.contains(id)
    }
}
