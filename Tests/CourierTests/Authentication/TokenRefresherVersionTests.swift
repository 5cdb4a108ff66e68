import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A rejected request is only ever handed a token newer than the one the server rejected.
@Suite("TokenRefresher: versions and setToken", .timeLimit(.minutes(1)))
struct TokenRefresherVersionTests {
    private struct RefreshError: Error {}

    /// A refresher whose first refresh (of `v1`) is held until `release` opens and then returns a token the
    /// server never accepts; later refreshes return `fresh`, the only token the server accepts.
    private struct Setup {
        let refresher: TokenRefresher
        let transport: MockTransport
        let client: Client
        let changes = ChangeSignal()
        let firstRefreshStarted = Gate()
        let releaseFirstRefresh = Gate()
        let replaced = Locked<[String]>([])

        init() {
            let (started, release, replaced) = (firstRefreshStarted, releaseFirstRefresh, self.replaced)
            refresher = TokenRefresher(token: .init("v1")) { old in
                let call = replaced.withLock { values in
                    values.append(old.value)
                    return values.count
                }
                guard call == 1 else { return .init("fresh") }
                started.open()
                await release.wait()
                return .init("from-first-refresh")
            }
            transport = MockTransport { request in
                bearer(request.urlRequest) == "Bearer fresh" ? .ok : .status(401)
            }
            client = Client(
                baseURL: exampleBaseURL,
                transport: transport,
                middleware: [.authenticating(with: refresher)]
            )
            refresher.onChange { [changes] in changes.signal() }
        }

        /// Starts a refresh of `v1` and holds it, with nobody waiting for it.
        func holdRefreshOfV1() async {
            let first = Task { try await refresher.refresh() }
            await firstRefreshStarted.wait()
            first.cancel()
            _ = await first.result
        }
    }

    @Test("issue 13 #9: rejected with a token set during a refresh: waits for it, then refreshes that token")
    func rejectedAfterSetTokenDuringRefresh() async throws {
        let setup = Setup()
        await setup.holdRefreshOfV1()
        await setup.refresher.setToken(.init("revoked"))  // the server never accepts it

        let request = Task { try await setup.client.send(authenticatedRequest()) }
        // Rejected with `revoked`, and waiting: the refresh in progress replaces `v1`, older than `revoked`.
        await setup.changes.wait { setup.refresher.waiterCount == 1 }
        setup.releaseFirstRefresh.open()

        #expect(try await request.join().1.statusCode == 200)
        #expect(setup.transport.requests.map(bearer) == ["Bearer revoked", "Bearer fresh"])
        #expect(setup.replaced.value == ["v1", "revoked"])
        #expect(setup.refresher.token.value == "fresh")
        #expect(setup.refresher.version == 3)
    }

    @Test("20 requests rejected with a token set during a refresh: one more refresh for all of them")
    func waveAfterSetTokenDuringRefresh() async throws {
        let setup = Setup()
        await setup.holdRefreshOfV1()
        await setup.refresher.setToken(.init("revoked"))

        let requests = (0..<20).map { _ in Task { try await setup.client.send(authenticatedRequest()) } }
        await setup.changes.wait { setup.refresher.waiterCount == 20 }
        setup.releaseFirstRefresh.open()

        for request in requests { #expect(try await request.join().1.statusCode == 200) }
        #expect(setup.replaced.value == ["v1", "revoked"])
        let sent = setup.transport.requests.map(bearer)
        #expect(sent.count { $0 == "Bearer revoked" } == 20)
        #expect(sent.count { $0 == "Bearer fresh" } == 20)
    }

    @Test("the first refresh fails after setToken: its failure is not handed to those rejected with the newer token")
    func droppedFailure() async throws {
        let release = Gate()
        let started = Gate()
        let calls = Locked(0)
        let refresher = TokenRefresher(token: .init("v1")) { _ in
            let call = calls.increment()
            guard call == 1 else { return .init("fresh") }
            started.open()
            await release.wait()
            throw RefreshError()
        }
        let changes = ChangeSignal()
        refresher.onChange { changes.signal() }
        let transport = MockTransport { request in bearer(request.urlRequest) == "Bearer fresh" ? .ok : .status(401) }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        let first = Task { try await refresher.refresh() }
        await started.wait()
        await refresher.setToken(.init("revoked"))
        #expect(try await first.join().value == "revoked")  // its waiters get the token set, at once

        let request = Task { try await client.send(authenticatedRequest()) }
        await changes.wait { refresher.waiterCount == 1 }
        release.open()

        #expect(try await request.join().1.statusCode == 200)
        #expect(calls.value == 2)
        // A request sent with `fresh` afterwards is not failed by the dropped failure either.
        #expect(try await client.send(authenticatedRequest()).1.statusCode == 200)
    }

    @Test("a request rejected with a token older than the one set during a refresh retries with it at once")
    func olderRejectionGetsTheTokenSet() async throws {
        let setup = Setup()
        let held = HoldingTransport(wrapping: setup.transport)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: held,
            middleware: [.authenticating(with: setup.refresher)]
        )
        let request = Task { try await client.send(authenticatedRequest()) }
        await held.waitUntilHolding(1)  // sent with v1
        await setup.holdRefreshOfV1()
        await setup.refresher.setToken(.init("fresh"))
        held.open()

        #expect(try await request.join().1.statusCode == 200)
        #expect(held.requests.map(bearer) == ["Bearer v1", "Bearer fresh"])
        #expect(setup.refresher.refreshCount == 1)  // only the one held
        setup.releaseFirstRefresh.open()
    }
}
