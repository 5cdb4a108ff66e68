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
        let holder = sharedHolder
        var version = sharedVersion
        // A token this replica obtained without the store goes there first: until it does, the store still
        // offers the refresh token it consumed to every other replica.
        if let pending = publication.withLock({ $0.pending }) {
            do {
                if let stored = try await publish(pending, sharing: sharing), stored.value == token.value {
                    version = stored.version
                }
            } catch {
                sharing.onEvent?(.storeFailed(operation: "finishRefresh", error: error))
                if pending.token.value == token.value {
                    // Still away: refreshed with this replica's own refresh token, which no other replica has seen.
                    return try await refreshLocally(
                        token,
                        as: pending.token.version,
                        replacing: pending.replaced,
                        sharing: sharing
                    )
                }
            }
        }
        while true {
            let lease: SharedRefreshLease
            do {
                lease = try await timed(sharing, "beginRefresh") { [version] in
                    try await store.beginRefresh(after: version, holder: holder, lease: sharing.lease)
                }
            } catch let error as CourierError where error.code == .decodingFailed {
                // The store answered: it holds a token this replica cannot open (a key it was not given yet, in a
                // key rotation's rolling deploy). Another replica refreshed with the refresh token this one holds,
                // so refreshing here would present a used one (reuse detection revokes the whole family).
                sharing.onEvent?(.storeFailed(operation: "beginRefresh", error: error))
                throw CourierError(
                    .refreshFailed,
                    message: "the shared store holds a token this replica cannot open (give it the sealing key "
                        + "the fleet seals with); not refreshing with a refresh token another replica may have used",
                    underlying: error
                )
            } catch {
                sharing.onEvent?(.storeFailed(operation: "beginRefresh", error: error))
                return try await refreshLocally(token, as: version + 1, replacing: token.value, sharing: sharing)
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
                    // Never refreshed here: the holder is refreshing with the very refresh token this replica
                    // would present. Its lease is waited out on this refresher's clock, then the store asked again.
                    sharing.onEvent?(.storeFailed(operation: "waitForChange", error: error))
                    try await sleep(left)
                }
            case .acquired(let current):
                return try await refreshUnderLease(token, sharedVersion: version, current: current, sharing: sharing)
            }
        }
    }

    /// Refreshes as the holder of the store's lease, from `current` (the store's token read under the lease),
    /// and stores the result as the next version.
    private nonisolated func refreshUnderLease(
        _ token: Token,
        sharedVersion: Int,
        current: SharedToken?,
        sharing: Sharing
    ) async throws -> (Token, sharedVersion: Int) {
        let store = sharing.store
        let holder = sharedHolder
        // Refreshed from what the store holds under the lease: its refresh token is the newest. A store holding
        // an older version than this replica's (restored from a backup, failed over) offers a used one: this
        // replica's own token is refreshed instead, and the result stored as the store's next version.
        let replaced: Token
        if let current, current.version >= sharedVersion {
            replaced = Self.token(from: current, sharing: sharing)
        } else {
            replaced = token
        }
        let refreshed: Token
        let renewal = renewLease(sharing: sharing)
        do {
            defer { renewal.cancel() }
            refreshed = try await operation(replaced)
        } catch {
            // Released at once, so another replica may try without waiting for the lease to expire.
            _ = try? await timed(sharing, "finishRefresh") {
                try await store.finishRefresh(nil, holder: holder)
            }
            throw error
        }
        Self.registerSecrets(of: refreshed)
        let next = Self.sharedToken(from: refreshed, version: (current?.version ?? 0) + 1, sharing: sharing)
        let stored: SharedToken?
        do {
            stored = try await timed(sharing, "finishRefresh") {
                try await store.finishRefresh(next, holder: holder)
            }
        } catch {
            // The new token is not lost: this process uses it, and publishes it while the lease still keeps
            // every other replica from refreshing with the refresh token it consumed.
            sharing.onEvent?(.storeFailed(operation: "finishRefresh", error: error))
            keepUnpublished(Unpublished(token: next, replaced: current?.value ?? token.value), sharing: sharing)
            return (refreshed, 0)
        }
        if let stored, !stored.isSameCredential(as: next) {
            // Another writer stored a token meanwhile (this one's lease had expired, or a token was set): the
            // fleet's wins.
            sharing.onEvent?(.adopted(version: stored.version))
            return (Self.token(from: stored, sharing: sharing), stored.version)
        }
        sharing.onEvent?(.refreshed(version: next.version))
        return (refreshed, stored == nil ? 0 : next.version)
    }

    /// How many times a holder renews its lease while its refresh runs, a third of the lease apart: ten leases in
    /// all. A refresh closure that has not returned by then is taken as hung, and another replica may refresh.
    package static var maximumLeaseRenewals: Int { 30 }

    /// Starts renewing this refresher's lease every third of ``Sharing/lease`` while its refresh runs (the caller
    /// cancels the task when the refresh ends), so that a token endpoint slower than the lease never lets a second
    /// replica refresh with the same refresh token. It stops when the store says the lease is not this holder's
    /// any more; a renewal that fails is tried again a third of the lease later.
    private nonisolated func renewLease(sharing: Sharing) -> Task<Void, Never> {
        let store = sharing.store
        let holder = sharedHolder
        return SharedWork.start {
            await SharedWork.withoutCallContext {
                for _ in 0..<Self.maximumLeaseRenewals {
                    do {
                        try await self.sleep(sharing.lease / 3)
                    } catch {
                        return
                    }
                    do {
                        let renewed = try await self.timed(sharing, "renewLease") {
                            try await store.renewLease(holder: holder, lease: sharing.lease)
                        }
                        if !renewed { return }
                    } catch is CancellationError {
                        return
                    } catch {
                        sharing.onEvent?(.storeFailed(operation: "renewLease", error: error))
                    }
                }
            }
        }
    }

    /// Refreshes without the store and keeps the result to publish as the store's version `version`.
    private nonisolated func refreshLocally(
        _ token: Token,
        as version: Int,
        replacing replaced: String?,
        sharing: Sharing
    ) async throws -> (Token, sharedVersion: Int) {
        let refreshed = try await operation(token)
        Self.registerSecrets(of: refreshed)
        let next = Self.sharedToken(from: refreshed, version: version, sharing: sharing)
        keepUnpublished(Unpublished(token: next, replaced: replaced), sharing: sharing)
        return (refreshed, 0)
    }

    // MARK: Publishing

    /// A token this replica obtained that the store has not taken.
    struct Unpublished: Sendable {
        /// The token, with the version it is to be stored as: one more than the version whose refresh token it
        /// consumed.
        var token: SharedToken
        /// The value of the token it replaced: a store holding that token under another version takes this one
        /// as its next all the same. `nil` for a token set with ``TokenRefresher/setToken(_:)`` (or refreshed from
        /// one before the store took it): it is stored whatever the store holds, as `replaceToken` does.
        var replaced: String?
    }

    /// What the refresher has to publish, and whether a task is publishing it.
    struct Publication: Sendable {
        var pending: Unpublished?
        var isPublishing = false
    }

    /// Keeps `unpublished` and starts a task that publishes it (unless one runs), at once and again every tenth
    /// of the lease while the lease lasts; what it cannot publish waits for the next refresh, which publishes
    /// it first.
    nonisolated func keepUnpublished(_ unpublished: Unpublished, sharing: Sharing) {
        let start = publication.withLock { publication in
            publication.pending = unpublished
            defer { publication.isPublishing = true }
            return !publication.isPublishing
        }
        guard start else { return }
        let until = elapsed() + sharing.lease
        SharedWork.start {
            await SharedWork.withoutCallContext {
                while true {
                    let pending = self.publication.withLock { publication in
                        if publication.pending == nil { publication.isPublishing = false }
                        return publication.pending
                    }
                    guard let pending else { return }
                    do {
                        _ = try await self.publish(pending, sharing: sharing)
                        continue
                    } catch {
                        // Reported by the refresh that kept it; the next refresh reports again.
                    }
                    let stop = self.elapsed() >= until
                    if !stop { try? await self.sleep(sharing.lease / 10) }
                    if stop || self.elapsed() >= until {
                        self.publication.withLock { $0.isPublishing = false }
                        return
                    }
                }
            }
        }
    }

    /// Stores `pending` as the store's next version (compare-and-set) unless another token was stored meanwhile,
    /// under a holder name that holds no lease (it never releases a lease this refresher holds).
    ///
    /// - Returns: What the store holds afterwards: `pending`'s token when it took it.
    /// - Throws: What the store threw, or its timeout; `pending` is kept then.
    @discardableResult
    nonisolated func publish(_ pending: Unpublished, sharing: Sharing) async throws -> SharedToken? {
        let store = sharing.store
        let holder = sharedHolder + "/publish"
        var attempt = pending.token
        var stored: SharedToken?
        if let replaced = pending.replaced {
            for _ in 0..<2 {
                stored = try await timed(sharing, "finishRefresh") { [attempt] in
                    try await store.finishRefresh(attempt, holder: holder)
                }
                // The store lost its token, or holds the replaced one under another version: this one is still
                // next.
                if stored == nil {
                    attempt.version = 1
                } else if let current = stored, current.value == replaced {
                    attempt.version = current.version + 1
                } else {
                    break
                }
            }
        } else {
            // A token set with setToken: stored whatever the store holds.
            stored = try await timed(sharing, "replaceToken") { [attempt] in try await store.replaceToken(attempt) }
        }
        let cleared = publication.withLock { publication in
            guard publication.pending?.token.isSameCredential(as: pending.token) == true else { return false }
            publication.pending = nil
            return true
        }
        if let stored, stored.isSameCredential(as: pending.token) {
            adoptSharedVersion(stored.version, ifValue: stored.value)
            if cleared { sharing.onEvent?(.published(version: stored.version)) }
        }
        return stored
    }

    /// Runs `operation` against the store, giving up after `limit` (``Sharing/storeTimeout`` by default) on the
    /// refresher's clock (``StoreCall/bounded(_:limit:sleep:_:)``).
    nonisolated func timed<Value: Sendable>(
        _ sharing: Sharing,
        _ name: String,
        limit: Duration? = nil,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await StoreCall.bounded(
            "the shared token store did not answer \(name)",
            limit: limit ?? sharing.storeTimeout,
            sleep: sleep,
            operation
        )
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
            expiresAt: token.expiresIn.map { sharing.currentDate().addingTimeInterval($0.timeInterval) },
            version: version
        )
    }

}

extension SharedToken {
    /// Whether `other` is the same credential, whatever the versions.
    func isSameCredential(as other: SharedToken) -> Bool {
        value == other.value && refreshToken == other.refreshToken
    }
}
