import Courier
import CourierTesting
import Foundation
import Testing

/// How the replicas of a fleet keep a refresh token from being presented twice when the store answers late,
/// fails, or another writer gets there first (the review of the fleet code, findings 2, 5/7 and 8). Every
/// refresh goes to a token endpoint with rotation and reuse detection, which counts reuses.
@Suite("A fleet's shared token refresh when things go wrong", .timeLimit(.minutes(1)))
struct SharedTokenFailureTests {
    private let server = RotatingTokenServer()
    private let clock = ManualClock()
    private let events = SharingEvents()

    private func store(_ token: SharedToken? = nil) -> InMemorySharedTokenStore<ManualClock> {
        InMemorySharedTokenStore(token: token, clock: clock)
    }

    private static let first = SharedToken("access-1", refreshToken: "refresh-1", version: 1)

    /// A replica's refresher on `store`, holding generation 1, refreshing at `server` after `beforeRefresh`.
    private func refresher(
        _ name: String,
        store: any SharedTokenStore,
        beforeRefresh: @escaping @Sendable () async throws -> Void = {}
    ) -> TokenRefresher {
        refresher(
            sharing: TokenRefresher.Sharing(store: store, holder: name, onEvent: events.record),
            beforeRefresh: beforeRefresh
        )
    }

    private func refresher(
        sharing: TokenRefresher.Sharing,
        beforeRefresh: @escaping @Sendable () async throws -> Void = {}
    ) -> TokenRefresher {
        TokenRefresher(token: RotatingTokenServer.token(1), clock: clock, sharing: sharing) { [server] replaced in
            try await beforeRefresh()
            return try server.refresh(with: replaced.refreshToken)
        }
    }

    @Test("A token stored by another writer while this replica refreshed wins over this replica's (finding 8)")
    func fleetTokenWinsOverLateFinish() async throws {
        let store = store(Self.first)
        let started = Gate()
        let release = Gate()
        let late = refresher("late", store: store) {
            started.open()
            await release.wait()
        }
        let signedIn = refresher("signed-in", store: store)
        let refreshing = Task { try await late.refresh() }
        await started.wait()

        // The user signs in again on another replica while `late` holds the lease and refreshes.
        await signedIn.setToken(.init("signed-in", refreshToken: "signed-in-refresh"))
        #expect(await store.token()?.version == 2)
        release.open()

        #expect(try await refreshing.join().value == "signed-in")
        #expect(late.token.value == "signed-in")
        #expect(await store.token()?.value == "signed-in")
        #expect(events.all == ["adopted v2"])
    }

    @Test("A replica whose wait for the lease holder fails waits out the lease and asks again (finding 2)")
    func failedWaitDoesNotRefreshLocally() async throws {
        let shared = store(Self.first)
        let flaky = FlakyTokenStore(shared) { operation, _ in operation == .waitForChange ? .before : nil }
        // Another replica holds the lease and is refreshing with refresh-1.
        #expect(await shared.beginRefresh(after: 1, holder: "holder", lease: .seconds(30)) == .acquired(Self.first))
        let waiting = refresher("waiting", store: flaky)
        let start = clock.now

        let refreshing = Task { try await waiting.refresh() }
        try await waitUntil { flaky.failures(.waitForChange) == 1 }
        try await waitUntil {
            clock.pendingDeadlines.contains(start.advanced(by: .seconds(30))) || server.refreshes > 0
        }
        // The holder's refresh ends; the waiting replica asks again once the lease it was told about is over.
        let next = try? server.refresh(with: "refresh-1")
        await shared.finishRefresh(
            next.map { SharedToken($0.value, refreshToken: $0.refreshToken, version: 2) },
            holder: "holder"
        )
        clock.advance(by: .seconds(30))

        #expect(try await refreshing.join().value == "access-2")
        #expect(server.reuses == 0)
        #expect(server.refreshes == 1)
        #expect(events.all == ["waiting", "storeFailed waitForChange", "adopted v2"])
    }

    @Test("Two refreshers made from one Sharing value are two holders: one refreshes, the other waits (finding 5/7)")
    func oneSharingTwoRefreshers() async throws {
        let store = store(Self.first)
        let sharing = TokenRefresher.Sharing(store: store, holder: "one-config", onEvent: events.record)
        let started = Gate()
        let release = Gate()
        let first = refresher(sharing: sharing) {
            started.open()
            await release.wait()
        }
        let second = refresher(sharing: sharing)

        let firstRefresh = Task { try await first.refresh() }
        await started.wait()
        let secondRefresh = Task { try await second.refresh() }
        try await waitUntil { store.waiterCount == 1 || server.refreshes > 0 }
        release.open()

        #expect(try await firstRefresh.join().value == "access-2")
        #expect(try await secondRefresh.join().value == "access-2")
        #expect(server.refreshes == 1)
        #expect(server.reuses == 0)
        #expect(store.leasesTaken == 1)
    }

    @Test(
        "A token obtained while finishRefresh failed is stored before the lease ends: nobody presents its refresh token again (finding 3)"
    )
    func failedFinishIsRetried() async throws {
        let shared = store(Self.first)
        let flaky = FlakyTokenStore(shared) { operation, call in
            operation == .finishRefresh && call == 0 ? .before : nil
        }
        let holder = refresher("holder", store: flaky)
        let other = refresher("other", store: shared)

        #expect(try await holder.refresh().value == "access-2")
        try await waitUntil { flaky.answered(.finishRefresh) == 1 }
        // The holder's lease is over, whatever happened to it.
        clock.advance(by: .seconds(31))

        #expect(try await other.refresh().value == "access-2")
        #expect(server.reuses == 0)
        #expect(server.refreshes == 1)
        #expect(await shared.token()?.value == "access-2")
    }

    @Test("A token refreshed locally while the store failed is published when the store answers again (finding 1)")
    func localRefreshIsPublished() async throws {
        let shared = store(Self.first)
        let flaky = FlakyTokenStore(shared) { operation, call in operation == .beginRefresh && call == 0 ? .before : nil
        }
        let fallback = refresher("fallback", store: flaky)
        let other = refresher("other", store: shared)

        #expect(try await fallback.refresh().value == "access-2")
        #expect(events.all.first == "storeFailed beginRefresh")
        try await waitUntil { flaky.answered(.finishRefresh) == 1 }

        #expect(try await other.refresh().value == "access-2")
        #expect(server.reuses == 0)
        #expect(server.refreshes == 1)
        #expect(await shared.token()?.version == 2)
    }

    @Test(
        "A token set while the store failed is stored when it answers, and the next refresh starts from it (finding 9)"
    )
    func setTokenIsPublishedAfterFailure() async throws {
        let shared = store(Self.first)
        let flaky = FlakyTokenStore(shared) { operation, call in operation == .replaceToken && call == 0 ? .before : nil
        }
        let presented = Locked<[String]>([])
        let sharing = TokenRefresher.Sharing(store: flaky, holder: "signed-in", onEvent: events.record)
        let refresher = TokenRefresher(token: RotatingTokenServer.token(1), clock: clock, sharing: sharing) {
            replaced in
            presented.withLock { $0.append(replaced.refreshToken ?? "none") }
            return .init("after-\(replaced.value)", refreshToken: "refresh-after-\(replaced.value)")
        }

        // The user signs in again while the store is unreachable.
        await refresher.setToken(.init("signed-in", refreshToken: "signed-in-refresh"))
        #expect(events.all.first == "storeFailed replaceToken")
        // The store answers again: the token set here is the fleet's, and the refresh starts from it rather than
        // adopting the token it replaced (the store's v1, older than the sign-in).
        #expect(try await refresher.refresh().value == "after-signed-in")
        #expect(presented.value == ["signed-in-refresh"])
        #expect(await shared.token()?.value == "after-signed-in")
        #expect(!events.all.contains("adopted v1"))
    }

    @Test("dump() of a shared token or a partition secret prints no secret (finding 12)")
    func reflectionHidesSecrets() {
        var text = ""
        dump(SharedToken("dumped-access", refreshToken: "dumped-refresh", version: 3), to: &text)
        dump(HTTPCache.PartitionSecret(Array(repeating: 0x41, count: 16)), to: &text)
        #expect(!text.contains("dumped-access"))
        #expect(!text.contains("dumped-refresh"))
        #expect(!text.contains("65"))  // the key's bytes
        #expect(text.contains("3"))  // the version is not secret
    }

    @Test("A store restored to an older token than the replica's: the replica refreshes its own token (finding 6)")
    func restoredStoreIsNotTrusted() async throws {
        _ = try server.refresh(with: "refresh-1")  // the fleet refreshed to generation 2
        let restorable = RestorableTokenStore(store(SharedToken("access-2", refreshToken: "refresh-2", version: 2)))
        let replica = refresher("replica", store: restorable)
        #expect(try await replica.refresh().value == "access-2")  // adopted from the store

        // The database is restored from a backup taken before that refresh.
        let backup = store(Self.first)
        restorable.restore(backup)
        #expect(try await replica.refresh().value == "access-3")

        #expect(server.reuses == 0)
        #expect(await backup.token()?.value == "access-3")
    }

    @Test("setToken stops waiting for a store that does not answer when its caller is cancelled (finding 11)")
    func setTokenHonoursCancellation() async throws {
        let hanging = HangingTokenStore()
        let replica = refresher("replica", store: hanging)
        let setting = Task { await replica.setToken(.init("signed-in", refreshToken: "signed-in-refresh")) }
        try await waitUntil { hanging.calls == 1 }

        setting.cancel()
        await setting.join()  // returns without the store answering and without time moving

        #expect(replica.token.value == "signed-in")
        #expect(events.all == ["storeFailed replaceToken"])
        hanging.recover()
    }
}

/// A store whose contents can be replaced by an older copy, as a database restored from a backup.
final class RestorableTokenStore: SharedTokenStore {
    private let current: LockedState<any SharedTokenStore>

    init(_ store: any SharedTokenStore) { current = LockedState(store) }

    func restore(_ store: any SharedTokenStore) { current.withLock { $0 = store } }

    private var store: any SharedTokenStore { current.withLock { $0 } }

    func token() async throws -> SharedToken? { try await store.token() }
    func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        try await store.beginRefresh(after: version, holder: holder, lease: lease)
    }
    func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? {
        try await store.finishRefresh(token, holder: holder)
    }
    func replaceToken(_ token: SharedToken) async throws -> SharedToken { try await store.replaceToken(token) }
    func waitForChange(after version: Int, timeout: Duration) async throws {
        try await store.waitForChange(after: version, timeout: timeout)
    }
}
