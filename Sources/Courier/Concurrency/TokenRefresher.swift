import Synchronization

/// Holds an expiring credential and refreshes it: once for any number of concurrent failures, in a task
/// that no caller can cancel, within a budget of refreshes per time window.
///
/// Use it with ``Middleware/authenticating(with:scheme:failure:)``:
///
/// ```swift
/// let auth = TokenRefresher(token: .init(storedToken, expiresIn: .seconds(3600))) { rejected in
///     let reply: TokenReply = try await client.send(
///         .post("/oauth/token", body: .form(["grant_type": "refresh_token", "refresh_token": refreshToken]))
///     )
///     return .init(reply.accessToken, expiresIn: .seconds(reply.expiresIn))
/// }
/// await client.use(.authenticating(with: auth))
/// ```
///
/// **What it guarantees.**
/// - **One refresh at a time.** However many requests fail with the same token, one refresh runs; every
///   one of them waits for it and retries once with the new token.
/// - **Versions.** Every stored token gets a ``version`` one higher than the last. A request that was
///   rejected with an older version than the current one retries with the current token and does not
///   refresh again (the stale-token race).
/// - **The refresh belongs to the refresher.** It runs in a task of its own, so a caller that is cancelled
///   while waiting stops waiting at once (it throws `CancellationError`), and the refresh goes on and
///   stores its token for everybody else.
/// - **Preemptive refresh.** A token with an expiry is refreshed before sending, once it is within
///   `leeway` of expiring, instead of after a rejection. Time is read from the injected clock.
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
///
/// **Cost.** The current token lives in a mutex, so the middleware reads it synchronously: a request whose
/// token is valid never awaits the actor. Only rejections and refreshes do.
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

        /// Creates a token.
        ///
        /// - Parameters:
        ///   - value: The credential.
        ///   - expiresIn: How long it stays valid, for example the `expires_in` of an OAuth reply; `nil` when
        ///     unknown (it is then only refreshed after the server rejects it).
        public init(_ value: String, expiresIn: Duration? = nil) {
            self.value = value
            self.expiresIn = expiresIn
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

        /// Creates a limit.
        ///
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

    /// The current token, readable without awaiting the actor.
    struct Credential: Sendable {
        var value: String
        var version: Int
        /// When the token expires, as a time since the refresher was created; `nil` when unknown.
        var expiresAt: Duration?
        /// How many refreshes have failed so far; a request compares it to detect a failure since it sent.
        var failedRefreshes: Int
    }

    private struct Refresh {
        let replacing: Int
        var waiters: [RefreshWaiter] = []
    }

    /// How long before expiry a token is refreshed preemptively.
    public nonisolated let leeway: Duration
    /// The limit on refreshes per time window.
    public nonisolated let limit: RefreshLimit

    // The current credential; written only by the actor, read by the middleware without awaiting it.
    private let current: LockedState<Credential>
    private let refreshesStarted = Atomic<Int>(0)
    private nonisolated let elapsed: @Sendable () -> Duration
    private let operation: @Sendable (Token) async throws -> Token

    private var refresh: Refresh?
    private var recentRefreshStarts: [Duration] = []
    private var lastFailure: CourierError?

    /// Creates a refresher.
    ///
    /// - Parameters:
    ///   - token: The token to start with, for example one kept from the last run.
    ///   - leeway: How long before its expiry a token is refreshed before sending.
    ///   - limit: The most refreshes within a time window; more fail with
    ///     ``CourierError/Code/tooManyRefreshes``.
    ///   - clock: The clock for expiry and for the refresh window; tests pass a manual clock.
    ///   - refresh: Gets a new token. It receives the token being replaced (rejected by the server, or
    ///     about to expire). It runs in a task owned by the refresher and is never cancelled by a caller.
    ///     It may send requests through the client that this refresher authenticates.
    public init(
        token: Token,
        leeway: Duration = .seconds(30),
        limit: RefreshLimit = .default,
        clock: some Clock<Duration> = ContinuousClock(),
        refresh: @escaping @Sendable (_ replaced: Token) async throws -> Token
    ) {
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        self.leeway = leeway
        self.limit = limit
        self.operation = refresh
        Redaction.registerSecret(token.value)
        self.current = LockedState(
            Credential(value: token.value, version: 1, expiresAt: token.expiresIn, failedRefreshes: 0)
        )
    }

    // MARK: Reading

    /// The current token; its ``Token/expiresIn`` is the time left from now.
    public nonisolated var token: Token {
        let credential = self.credential
        return Token(credential.value, expiresIn: credential.expiresAt.map { $0 - elapsed() })
    }

    /// The current token's version: 1 for the first token, one more for every token stored since.
    public nonisolated var version: Int {
        credential.version
    }

    /// How many refreshes have started (successful or not).
    public nonisolated var refreshCount: Int {
        refreshesStarted.load(ordering: .relaxed)
    }

    nonisolated var credential: Credential {
        current.withLock { $0 }
    }

    /// Whether `credential` is within the leeway of its expiry (or past it).
    nonisolated func isExpiring(_ credential: Credential) -> Bool {
        guard let expiresAt = credential.expiresAt else { return false }
        return elapsed() + leeway >= expiresAt
    }

    // MARK: Using

    /// Returns the current token, refreshed first if it is within ``leeway`` of expiring.
    ///
    /// For code that needs the credential outside a ``Client``, for example to open a WebSocket.
    ///
    /// - Returns: A token that is not about to expire.
    /// - Throws: ``CourierError/Code/refreshFailed``, ``CourierError/Code/tooManyRefreshes``, or
    ///   `CancellationError` when the calling task is cancelled while waiting.
    public func validToken() async throws -> Token {
        var credential = self.credential
        if isExpiring(credential) {
            credential = try await newerCredential(than: credential)
        }
        return Token(credential.value, expiresIn: credential.expiresAt.map { $0 - elapsed() })
    }

    /// Refreshes the current token now, or joins the refresh in progress.
    ///
    /// - Returns: The new token.
    /// - Throws: ``CourierError/Code/refreshFailed``, ``CourierError/Code/tooManyRefreshes``, or
    ///   `CancellationError` when the calling task is cancelled while waiting.
    @discardableResult
    public func refresh() async throws -> Token {
        let credential = try await newerCredential(than: self.credential)
        return Token(credential.value, expiresIn: credential.expiresAt.map { $0 - elapsed() })
    }

    /// Stores a token obtained elsewhere (for example after the user signs in again) as the next version.
    ///
    /// A refresh in progress is not cancelled, but its result is dropped: its waiters get this token.
    ///
    /// - Parameter token: The new token.
    public func setToken(_ token: Token) {
        Redaction.registerSecret(token.value)
        let now = elapsed()
        current.withLock { credential in
            credential.value = token.value
            credential.version += 1
            credential.expiresAt = token.expiresIn.map { now + $0 }
        }
    }

    // MARK: Refreshing

    /// Returns a credential newer than `stale`: the current one if somebody already replaced `stale`,
    /// otherwise the result of a refresh (started here, or already in progress).
    func newerCredential(than stale: Credential) async throws -> Credential {
        try Task.checkCancellation()
        let credential = self.credential
        if credential.version > stale.version { return credential }
        if credential.failedRefreshes > stale.failedRefreshes, let lastFailure {
            // A refresh of this very token failed after the caller read it: same wave, same error.
            throw lastFailure
        }
        if Self.isRefreshing(ObjectIdentifier(self)) {
            // The refresh closure itself is asking for a new token: waiting would wait for itself forever.
            throw CourierError(
                .refreshFailed,
                message: "the refresh closure asked its own refresher for a new token, which would never come"
            )
        }
        if refresh == nil {
            try startRefresh(of: credential)
        }
        let waiter = RefreshWaiter()
        refresh?.waiters.append(waiter)
        return try await withTaskCancellationHandler {
            try await waiter.wait()
        } onCancel: {
            waiter.cancel()
        }
    }

    private func startRefresh(of credential: Credential) throws {
        let now = elapsed()
        recentRefreshStarts.removeAll { now - $0 >= limit.window }
        guard recentRefreshStarts.count < limit.maximum else {
            throw CourierError(
                .tooManyRefreshes,
                message: "\(limit.maximum) credential refreshes already started within \(limit.window)"
            )
        }
        recentRefreshStarts.append(now)
        refreshesStarted.wrappingAdd(1, ordering: .relaxed)
        refresh = Refresh(replacing: credential.version)

        let replaced = Token(credential.value, expiresIn: credential.expiresAt.map { $0 - now })
        let operation = self.operation
        // Requests sent by `refresh` pass through this refresher's middleware (and those of any refresher
        // whose refresh this one runs inside) untouched.
        let context = Self.refreshing + [ObjectIdentifier(self)]
        Task.detached(priority: Task.currentPriority) {
            let result: Result<Token, any Error>
            do {
                result = .success(try await Self.$refreshing.withValue(context) { try await operation(replaced) })
            } catch {
                result = .failure(error)
            }
            await self.finishRefresh(result)
        }
    }

    private func finishRefresh(_ result: Result<Token, any Error>) {
        guard let refresh else { return }
        self.refresh = nil
        let outcome: Result<Credential, any Error>
        switch result {
        case .success(let token) where !Self.isUsable(token.value):
            outcome = .failure(
                recordFailure(
                    CourierError(
                        .refreshFailed,
                        message: "the refreshed token is empty or contains CR, LF or NUL"
                    )
                )
            )
        case .success(let token):
            Redaction.registerSecret(token.value)
            let now = elapsed()
            outcome = .success(
                current.withLock { credential in
                    // A token stored with setToken(_:) during the refresh wins over the refresh's result.
                    guard credential.version == refresh.replacing else { return credential }
                    credential.value = token.value
                    credential.version += 1
                    credential.expiresAt = token.expiresIn.map { now + $0 }
                    return credential
                }
            )
        case .failure(let error):
            outcome = .failure(
                recordFailure(
                    CourierError(.refreshFailed, message: "refreshing the credential failed", underlying: error)
                )
            )
        }
        for waiter in refresh.waiters { waiter.resume(with: outcome) }
    }

    private func recordFailure(_ error: CourierError) -> CourierError {
        lastFailure = error
        current.withLock { $0.failedRefreshes += 1 }
        return error
    }

    private static func isUsable(_ value: String) -> Bool {
        !value.isEmpty && !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
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

/// One caller waiting for a refresh: resumed once, by the refresh's end or by the caller's cancellation,
/// whichever comes first.
private final class RefreshWaiter: Sendable {
    private enum State {
        case pending
        case waiting(CheckedContinuation<TokenRefresher.Credential, any Error>)
        case finished(Result<TokenRefresher.Credential, any Error>)
        case cancelled
    }

    // Guards the one-shot state.
    private let state = LockedState(State.pending)

    func wait() async throws -> TokenRefresher.Credential {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<TokenRefresher.Credential, any Error>? in
                switch state {
                case .pending:
                    state = .waiting(continuation)
                    return nil
                case .finished(let result):
                    return result
                case .cancelled, .waiting:
                    return .failure(CancellationError())
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    func resume(with result: Result<TokenRefresher.Credential, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<TokenRefresher.Credential, any Error>? in
            switch state {
            case .pending:
                state = .finished(result)
                return nil
            case .waiting(let continuation):
                state = .finished(result)
                return continuation
            case .finished, .cancelled:
                return nil
            }
        }
        continuation?.resume(with: result)
    }

    func cancel() {
        let continuation = state.withLock { state -> CheckedContinuation<TokenRefresher.Credential, any Error>? in
            switch state {
            case .pending:
                state = .cancelled
                return nil
            case .waiting(let continuation):
                state = .cancelled
                return continuation
            case .finished, .cancelled:
                return nil
            }
        }
        continuation?.resume(throwing: CancellationError())
    }
}
