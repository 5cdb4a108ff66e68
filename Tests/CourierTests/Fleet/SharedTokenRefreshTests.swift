import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Several ``TokenRefresher``s — the replicas of a fleet — on one ``InMemorySharedTokenStore``, against a token
/// endpoint with refresh-token rotation and reuse detection. Leases are measured on a manual clock, so a lease
/// expires only when a test moves time.
@Suite("A fleet's shared token refresh", .timeLimit(.minutes(1)))
struct SharedTokenRefreshTests {
    private let server = RotatingTokenServer()
    private let clock = ManualClock()
    private let events = SharingEvents()

    private func store(_ token: SharedToken? = nil) -> InMemorySharedTokenStore<ManualClock> {
        InMemorySharedTokenStore(token: token, clock: clock)
    }

    /// A replica: a refresher on `store` that starts with `token` (the pair of generation 1 by default) and
    /// refreshes at `server`, after `beforeRefresh`.
    private func replica(
        _ name: String,
        store: any SharedTokenStore,
        token: TokenRefresher.Token = RotatingTokenServer.token(1),
        storeTimeout: Duration = .seconds(5),
        beforeRefresh: @escaping @Sendable () async throws -> Void = {}
    ) -> (TokenRefresher, Client) {
        let sharing = TokenRefresher.Sharing(
            store: store,
            holder: name,
            storeTimeout: storeTimeout,
            onEvent: events.record
        )
        let refresher = TokenRefresher(token: token, clock: clock, sharing: sharing) { [server] replaced in
            try await beforeRefresh()
            return try server.refresh(with: replaced.refreshToken)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: server.api(),
            middleware: [.authenticating(with: refresher)]
        )
        return (refresher, client)
    }

    @Test("8 replicas × 50 concurrent 401s: exactly one refresh in the fleet, no family revoked, every call succeeds")
    func oneRefreshAcrossReplicas() async throws {
        let store = store()
        let started = Gate()
        let release = Gate()
        let replicas = (0..<8).map { index in
            replica("replica-\(index)", store: store) {
                started.open()
                await release.wait()
            }
        }
        server.expireAccessToken()

        let calls = Task {
            await withTaskGroup(of: (ok: Int, errors: [String]).self) { group in
                for (_, client) in replicas { group.addTask { await sendConcurrently(50, through: client) } }
                return await group.reduce(into: (ok: 0, errors: [String]())) {
                    $0.ok += $1.ok
                    $0.errors += $1.errors
                }
            }
        }
        // One replica holds the lease and refreshes; the seven others wait on the store, not on a refresh.
        await started.wait()
        try await waitUntil { store.waiterCount == 7 }
        #expect(server.refreshes == 0)
        release.open()
        let (ok, errors) = await calls.join()

        #expect(errors.count == 0, "first: \(errors.first ?? "none")")
        #expect(ok == 400)
        #expect(server.refreshes == 1)
        #expect(server.reuses == 0)
        #expect(!server.isRevoked)
        #expect(store.leasesTaken == 1)
        #expect(await store.token()?.version == 1)
        #expect(await store.token()?.value == "access-2")
        for (refresher, _) in replicas {
            #expect(refresher.token.value == "access-2")
            #expect(refresher.refreshCount == 1)  // one refresh task per process, and only one called the server
        }
        #expect(events.all.count { $0 == "refreshed v1" } == 1)
        #expect(events.all.count { $0 == "adopted v1" } == 7)
    }

    @Test("A request whose token is valid never reaches the store: 100 concurrent calls, no store call")
    func validTokenNeverReachesStore() async throws {
        let counting = FlakyTokenStore(store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))) { _, _ in
            nil
        }
        let (refresher, client) = replica("valid", store: counting)
        let (ok, errors) = await sendConcurrently(100, through: client)
        #expect(ok == 100, "first: \(errors.first ?? "none")")
        for operation in FlakyTokenStore<ManualClock>.Operation.allCases {
            #expect(counting.calls(operation) == 0, "\(operation)")
        }
        #expect(refresher.refreshCount == 0)
    }

    @Test("A replica that finds a newer token in the store uses it and does not refresh")
    func newerTokenIsAdopted() async throws {
        // Another replica refreshed to generation 2 already; this one still holds generation 1.
        _ = try server.refresh(with: "refresh-1")
        let store = store(SharedToken("access-2", refreshToken: "refresh-2", version: 2))
        let (refresher, client) = replica("late", store: store)

        let (_, response) = try await client.send(authenticatedRequest())

        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)  // only the other replica's
        #expect(store.leasesTaken == 0)
        #expect(refresher.token.value == "access-2")
        #expect(events.all == ["adopted v2"])
    }

    @Test("A replica that finds its own token in the store refreshes it, as the next version")
    func sameTokenInStoreIsRefreshed() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        let (refresher, client) = replica("only", store: store)
        server.expireAccessToken()

        let (_, response) = try await client.send(authenticatedRequest())

        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)
        #expect(await store.token()?.version == 2)
        #expect(refresher.token.value == "access-2")
        #expect(events.all == ["refreshed v2"])
    }

    @Test("The lease holder crashed: nobody refreshes until its lease expires, then one replica does")
    func expiredLeaseOfCrashedHolder() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        // A process took the lease and died: it will never finish nor release it.
        let crashed = await store.beginRefresh(after: 1, holder: "crashed", lease: .seconds(30))
        #expect(crashed == .acquired(SharedToken("access-1", refreshToken: "refresh-1", version: 1)))
        let (refresher, client) = replica("survivor", store: store)
        server.expireAccessToken()

        let call = Task { try await client.send(authenticatedRequest()).1.statusCode }
        let leaseEnd = clock.now.advanced(by: .seconds(30))
        try await waitUntil { store.waiterCount == 1 && clock.pendingDeadlines.contains(leaseEnd) }
        #expect(server.refreshes == 0)
        clock.advance(by: .seconds(29))
        #expect(store.waiterCount == 1)
        #expect(server.refreshes == 0)
        clock.advance(by: .seconds(1))

        #expect(try await call.join() == 200)
        #expect(server.refreshes == 1)
        #expect(server.reuses == 0)
        #expect(store.leasesTaken == 2)
        #expect(refresher.token.value == "access-2")
        #expect(events.all == ["waiting", "refreshed v2"])
    }

    /// Moves the clock a third of the lease at a time, `renewals` times, each time once the holder's renewal is
    /// asleep for it, and waits until the renewal has moved the lease's end to 30 s after it.
    private func passRenewals(
        _ renewals: Int,
        holder: String,
        store: InMemorySharedTokenStore<ManualClock>
    )
        async throws
    {
        for _ in 0..<renewals {
            let renewal = clock.now.advanced(by: .seconds(10))
            try await waitUntil { clock.pendingDeadlines.contains(renewal) }
            clock.advance(to: renewal)
            try await waitUntil { store.leaseEnds == renewal.advanced(by: .seconds(30)) }
            #expect(store.leaseHolder?.hasPrefix(holder) == true)
        }
    }

    @Test("A refresh slower than its lease keeps it: the holder renews it, and no other replica refreshes meanwhile")
    func slowRefreshRenewsLease() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        let release = Gate()
        let (_, slow) = replica("slow", store: store) { await release.wait() }
        let (other, otherClient) = replica("other", store: store)
        server.expireAccessToken()

        let first = Task { try await slow.send(authenticatedRequest()).1.statusCode }
        try await waitUntil { store.leaseHolder != nil }
        // 100 s of a token endpoint that has not answered, more than three leases of 30 s.
        try await passRenewals(10, holder: "slow", store: store)
        let second = Task { try await otherClient.send(authenticatedRequest()).1.statusCode }
        try await waitUntil { store.waiterCount == 1 }
        #expect(server.refreshes == 0)
        release.open()

        #expect(try await first.join() == 200)
        #expect(try await second.join() == 200)
        #expect(server.refreshes == 1)
        #expect(server.reuses == 0)
        #expect(store.leasesTaken == 1)
        #expect(other.token.value == "access-2")
        // The renewals ended with the refresh: the lease was released and nobody renews it.
        #expect(store.leaseHolder == nil)
        #expect(!clock.pendingDeadlines.contains(clock.now.advanced(by: .seconds(10))))
    }

    @Test("A refresh that never returns is taken as hung after ten leases: then another replica refreshes")
    func hungRefreshStopsRenewing() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        let (_, hung) = replica("hung", store: store) { await Gate().wait() }
        let (other, otherClient) = replica("other", store: store)
        server.expireAccessToken()

        let stuck = Task { try await hung.send(authenticatedRequest()) }
        defer { stuck.cancel() }
        try await waitUntil { store.leaseHolder != nil }
        try await passRenewals(TokenRefresher.maximumLeaseRenewals, holder: "hung", store: store)
        // No renewal after the last: the lease ends 30 s after it.
        let leaseEnd = clock.now.advanced(by: .seconds(30))
        #expect(!clock.pendingDeadlines.contains(clock.now.advanced(by: .seconds(10))))
        clock.advance(to: leaseEnd)
        #expect(store.leaseHolder == nil)

        let (_, response) = try await otherClient.send(authenticatedRequest())
        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)
        #expect(other.token.value == "access-2")
    }

    @Test("A failed refresh releases the lease at once: the next replica refreshes without waiting for it")
    func failedRefreshReleasesLease() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        struct TokenEndpointDown: Error {}
        let (_, failing) = replica("failing", store: store) { throw TokenEndpointDown() }
        let (_, healthy) = replica("healthy", store: store)
        server.expireAccessToken()

        await #expect(throws: CourierError.self) { try await failing.send(authenticatedRequest()) }
        #expect(store.leaseHolder == nil)
        let (_, response) = try await healthy.send(authenticatedRequest())

        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)
        #expect(store.leasesTaken == 2)
    }

    @Test("setToken on one replica reaches the others through the store, without a refresh")
    func setTokenIsShared() async throws {
        let store = store(SharedToken("access-1", refreshToken: "refresh-1", version: 1))
        let (signedIn, _) = replica("signed-in", store: store)
        let (_, other) = replica("other", store: store)
        let fresh = try server.refresh(with: "refresh-1")  // the user signed in again elsewhere

        await signedIn.setToken(fresh)

        #expect(await store.token()?.value == "access-2")
        #expect(await store.token()?.version == 2)
        let (_, response) = try await other.send(authenticatedRequest())
        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)
        #expect(events.all == ["adopted v2"])
    }

    @Test("A store that throws: the replica refreshes locally, reports it, and the call succeeds")
    func failingStoreFallsBackToLocalRefresh() async throws {
        let (refresher, client) = replica("alone", store: FailingTokenStore())
        server.expireAccessToken()

        let (_, response) = try await client.send(authenticatedRequest())

        #expect(response.statusCode == 200)
        #expect(server.refreshes == 1)
        #expect(refresher.token.value == "access-2")
        #expect(events.all == ["storeFailed beginRefresh"])
    }

    @Test("A store that does not answer: after the store timeout the replica refreshes locally, nothing hangs")
    func hangingStoreTimesOut() async throws {
        let store = HangingTokenStore()
        let (_, client) = replica("alone", store: store, storeTimeout: .seconds(5))
        server.expireAccessToken()

        let call = Task { try await client.send(authenticatedRequest()).1.statusCode }
        let timeout = clock.now.advanced(by: .seconds(5))
        try await waitUntil { store.calls == 1 && clock.pendingDeadlines.contains(timeout) }
        #expect(server.refreshes == 0)
        clock.advance(by: .seconds(5))

        #expect(try await call.join() == 200)
        #expect(server.refreshes == 1)
        #expect(events.all == ["storeFailed beginRefresh"])
        // The store comes back: the token refreshed without it is stored there at once, and the next refresh
        // asks the store again.
        store.recover()
        try await waitUntil { events.all.contains("published v1") }
        server.expireAccessToken()
        #expect(try await client.send(authenticatedRequest()).1.statusCode == 200)
        #expect(store.calls == 4)  // beginRefresh (abandoned), finishRefresh (publishing), beginRefresh, finishRefresh
        #expect(events.all == ["storeFailed beginRefresh", "published v1", "refreshed v2"])
    }

    @Test("One process without a store behaves as before: the refresh closure gets the refresh token back")
    func refreshTokenTravelsWithTheToken() async throws {
        let refresher = TokenRefresher(token: RotatingTokenServer.token(1)) { [server] replaced in
            try server.refresh(with: replaced.refreshToken)
        }
        server.expireAccessToken()
        try await refresher.refresh()
        server.expireAccessToken()
        let token = try await refresher.refresh()
        #expect(token.value == "access-3")
        #expect(token.refreshToken == "refresh-3")
        #expect(server.reuses == 0)
        #expect(!token.description.contains("refresh-3"))
    }
}

/// A store whose every call throws: the database is down.
struct FailingTokenStore: SharedTokenStore {
    struct Down: Error {}
    func token() async throws -> SharedToken? { throw Down() }
    func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        throw Down()
    }
    func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? { throw Down() }
    func replaceToken(_ token: SharedToken) async throws -> SharedToken { throw Down() }
    func waitForChange(after version: Int, timeout: Duration) async throws { throw Down() }
}

/// A store whose calls never return (ignoring cancellation, like a connection stuck on a dead peer) until
/// ``recover()``; then it behaves like an in-memory store.
final class HangingTokenStore: SharedTokenStore {
    private let hung = Gate()
    private let counter = LockedState(0)
    private let healthy = InMemorySharedTokenStore(clock: ManualClock())

    var calls: Int { counter.withLock { $0 } }

    func recover() { hung.open() }

    private func enter() async {
        counter.withLock { $0 += 1 }
        await hung.wait()
    }

    func token() async throws -> SharedToken? {
        await enter()
        return await healthy.token()
    }
    func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        await enter()
        return await healthy.beginRefresh(after: version, holder: holder, lease: lease)
    }
    func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? {
        await enter()
        return await healthy.finishRefresh(token, holder: holder)
    }
    func replaceToken(_ token: SharedToken) async throws -> SharedToken {
        await enter()
        return await healthy.replaceToken(token)
    }
    func waitForChange(after version: Int, timeout: Duration) async throws {
        await enter()
        try await healthy.waitForChange(after: version, timeout: timeout)
    }
}
