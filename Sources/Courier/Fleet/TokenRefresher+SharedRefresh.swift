import Foundation

extension TokenRefresher {
    /// The refresh of a refresher that shares its token (see ``Sharing``): run by the one refresh task of this
    /// process, it asks the store whether another replica already has a newer token, takes the lease and
    /// refreshes, or waits for the replica holding the lease, and falls back to refreshing locally when the
    /// store fails.
    ///
    /// - Parameters:
    ///   - token: The token being replaced, as this process holds it.
    ///   - sharedVersion: Its version in the store; 0 when it did not come from the store.
    /// - Returns: The new token and its version in the store (0 when the store did not take it).
    nonisolated func sharedRefresh(
        replacing token: Token,
        sharedVersion: Int,
        sharing: Sharing
    ) async throws -> (Token, sharedVersion: Int) {
        let store = sharing.store
        let holder = sharing.holder
        var version = sharedVersion
        while true {
            let lease: SharedRefreshLease
            do {
                lease = try await timed(sharing, "beginRefresh") { [version] in
                    try await store.beginRefresh(after: version, holder: holder, lease: sharing.lease)
                }
            } catch {
                sharing.onEvent?(.storeFailed(operation: "beginRefresh", error: error))
                return (try await operation(token), 0)
            }
            switch lease {
            case .newer(let shared) where shared.value == token.value:
                // The store holds the very token being replaced (this process had not read it from there): it is
                // not newer, so ask again as its holder.
                version = shared.version
            case .newer(let shared):
                sharing.onEvent?(.adopted(version: shared.version))
                return (Self.token(from: shared, sharing: sharing), shared.version)
            case .held(let left):
                sharing.onEvent?(.waiting(holderLeaseLeft: left))
                do {
                    try await timed(sharing, "waitForChange", limit: left + sharing.storeTimeout) { [version] in
                        try await store.waitForChange(after: version, timeout: left)
                    }
                } catch {
                    sharing.onEvent?(.storeFailed(operation: "waitForChange", error: error))
                    return (try await operation(token), 0)
                }
            case .acquired(let current):
                // Refreshed from what the store holds under the lease: its refresh token is the newest.
                let replaced = current.map { Self.token(from: $0, sharing: sharing) } ?? token
                let refreshed: Token
                do {
                    refreshed = try await operation(replaced)
                } catch {
                    // Released at once, so another replica may try without waiting for the lease to expire.
                    _ = try? await timed(sharing, "finishRefresh") {
                        try await store.finishRefresh(nil, holder: holder)
                    }
                    throw error
                }
                let next = Self.sharedToken(from: refreshed, version: (current?.version ?? 0) + 1, sharing: sharing)
                let stored: SharedToken?
                do {
                    stored = try await timed(sharing, "finishRefresh") {
                        try await store.finishRefresh(next, holder: holder)
                    }
                } catch {
                    // The new token is not lost: this process uses it.
                    sharing.onEvent?(.storeFailed(operation: "finishRefresh", error: error))
                    return (refreshed, 0)
                }
                guard let stored, stored.version != next.version else {
                    sharing.onEvent?(.refreshed(version: next.version))
                    return (refreshed, next.version)
                }
                // Another replica stored a newer token meanwhile (this one's lease had expired): the fleet's wins.
                sharing.onEvent?(.adopted(version: stored.version))
                return (Self.token(from: stored, sharing: sharing), stored.version)
            }
        }
    }

    /// Runs `operation` against the store, giving up after `limit` (``Sharing/storeTimeout`` by default) on the
    /// refresher's clock.
    ///
    /// The operation runs in a task of its own that is cancelled, not awaited, when the time is up: a store
    /// that ignores cancellation (a connection stuck on a dead peer) cannot hold the refresh past the limit.
    nonisolated func timed<Value: Sendable>(
        _ sharing: Sharing,
        _ name: String,
        limit: Duration? = nil,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let limit = limit ?? sharing.storeTimeout
        let sleep = self.sleep
        let race = LockedState<CheckedContinuation<Value, any Error>?>(nil)
        let finish = { @Sendable (result: Result<Value, any Error>) in
            race.withLock { continuation in
                defer { continuation = nil }
                return continuation
            }?.resume(with: result)
        }
        // The timer is cancelled once the operation ends, so it leaves no sleeper behind.
        let timer = LockedState<Task<Void, Never>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            race.withLock { $0 = continuation }
            let work = SharedWork.start {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                finish(result)
                timer.withLock { $0 }?.cancel()
            }
            let sleeper = SharedWork.start {
                do {
                    try await sleep(limit)
                } catch {
                    return
                }
                work.cancel()
                let message = "the shared token store did not answer \(name) within \(limit)"
                finish(.failure(CourierError(.timedOut, message: message)))
            }
            let finished = timer.withLock { timer in
                timer = sleeper
                return race.withLock { $0 == nil }
            }
            if finished { sleeper.cancel() }
        }
    }

    /// A shared token as this process's ``Token``: its lifetime measured from now on the wall clock.
    static func token(from shared: SharedToken, sharing: Sharing) -> Token {
        registerSecrets(of: Token(shared.value, refreshToken: shared.refreshToken))
        let lifetime = shared.expiresAt.map {
            NetworkNumber.duration(seconds: $0.timeIntervalSince(sharing.currentDate()))
        }
        return Token(shared.value, expiresIn: lifetime, refreshToken: shared.refreshToken)
    }

    /// This process's `token` as the store keeps it: its expiry in wall-clock time.
    static func sharedToken(from token: Token, version: Int, sharing: Sharing) -> SharedToken {
        SharedToken(
            token.value,
            refreshToken: token.refreshToken,
            expiresAt: token.expiresIn.map { sharing.currentDate().addingTimeInterval(seconds($0)) },
            version: version
        )
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
