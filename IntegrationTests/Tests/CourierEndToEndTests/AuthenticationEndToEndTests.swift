import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Token refresh and request counting over real sockets", .endToEndLimit(minutes: 3))
struct AuthenticationEndToEndTests {
    /// A refresher that gets its tokens from the server's realm named by the test's key, through a client
    /// without the refresher.
    static func refresher(_ e2e: EndToEnd) async throws -> TokenRefresher {
        let realm = e2e.key
        let tokenClient = e2e.client([.validatingStatus()])
        let first: TokenResponse = try await tokenClient.send(.post("/auth/\(realm)/token"))
        return TokenRefresher(token: .init(first.token)) { _ in
            let reply: TokenResponse = try await tokenClient.send(.post("/auth/\(realm)/token"))
            return .init(reply.token, expiresIn: .seconds(reply.expiresIn))
        }
    }

    /// Sends a request to the protected route of the realm named by the test's key, through a client
    /// authenticated by a refresher that starts from `token` and refreshes by posting to the token endpoint
    /// `tokenPath` (with `query`) through a second client without the refresher; returns the error the request
    /// fails with, and the refresher.
    static func failingProtectedCall(
        _ e2e: EndToEnd,
        token: String,
        tokenPath: String,
        query: Query = []
    ) async throws -> (error: CourierError, refresher: TokenRefresher) {
        let tokenClient = e2e.client([.validatingStatus()])
        let refresher = TokenRefresher(token: .init(token)) { _ in
            let reply: TokenResponse = try await tokenClient.send(.post(tokenPath, query: query))
            return .init(reply.token)
        }
        let client = e2e.client([.authenticating(with: refresher), .validatingStatus()])
        let error = try await #require(throws: CourierError.self) {
            try await client.send(Request<Data>.get("/auth/\(e2e.key)/protected"))
        }
        return (error, refresher)
    }

    @Test(
        "Refresh storm: 1,000 concurrent requests with an expired token make one refresh at the server",
        arguments: TransportKind.allCases
    )
    func refreshStorm(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let realm = e2e.key
            let refresher = try await Self.refresher(e2e)
            let counter = RequestCounter()
            let client = e2e.client(
                [.counting(counter), .authenticating(with: refresher), .validatingStatus()],
                connections: 64
            )
            let expired: [String: Bool] = try await client.send(.post("/auth/\(realm)/expire"))
            #expect(expired == ["expired": true])

            let requests = (0..<1000).map { _ in Request<Data>.get("/auth/\(realm)/protected") }
            let results = await client.sendAll(requests, maxConcurrency: 1000)
            let failures = results.filter { if case .failure = $0 { true } else { false } }
            #expect(failures.isEmpty, "\(failures.prefix(3))")

            let stats = try await e2e.inspector.authStats(realm)
            #expect(stats.refreshes == 1)
            #expect(stats.issued == 2)
            #expect(stats.accepted == 1000)
            #expect(refresher.refreshCount == 1)
            await counter.waitUntilIdle()
            let counts = counter.snapshot
            #expect(counts.inFlight == 0)
            #expect(counts.started == 1001)
            #expect(counts.succeeded == 1001)
        }
    }

    @Test(
        "A token the server rejects for good fails each request once, with authenticationRejected",
        arguments: TransportKind.allCases
    )
    func rejectedForGood(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            // Every refresh returns a token of another realm: the server never accepts it.
            let (error, refresher) = try await Self.failingProtectedCall(
                e2e,
                token: "never-valid",
                tokenPath: "/auth/\(uniqueKey())/token"
            )
            #expect(error.code == .authenticationRejected)
            #expect(error.statusCode == 401)
            // The first try and the one retry after the refresh; no more.
            #expect(try await e2e.inspector.authStats(e2e.key).rejected == 2)
            #expect(refresher.refreshCount == 1)
        }
    }

    @Test(
        "A failing token endpoint fails the request with refreshFailed",
        arguments: TransportKind.allCases
    )
    func refreshFails(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let (error, _) = try await Self.failingProtectedCall(
                e2e,
                token: "stale",
                tokenPath: "/auth/\(e2e.key)/token",
                query: ["fail": 500]
            )
            #expect(error.code == .refreshFailed)
            #expect(try await e2e.inspector.authStats(e2e.key).issued == 0)
        }
    }

    @Test(
        "The counter returns to zero after successes, failures, timeouts and cancellations",
        arguments: TransportKind.allCases
    )
    func counterBalances(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let counter = RequestCounter()
            let transport = kind.make()
            let client = Client(
                baseURL: e2e.server.baseURL,
                transport: transport,
                middleware: [.counting(counter), .validatingStatus()]
            )
            let _: User = try await client.send(.get("/users/1"))
            _ = try? await client.send(Request<Data>.get("/status/500"))
            // A timeout on a manual clock, moved on once the server holds the request. A long one: a transport
            // that honours the call's deadline (AsyncHTTPClientTransport) counts it in real time.
            let clock = ManualClock()
            let hasty = Client(
                baseURL: e2e.server.baseURL,
                transport: transport,
                middleware: [.counting(counter), .timeout(.seconds(60), clock: clock)]
            )
            let timingOut = Task { try await hasty.send(Request<Data>.get("/hang", query: ["key": .init(e2e.key)])) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1])
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(60))
            let timedOut = try await #require(throws: CourierError.self) { try await timingOut.join() }
            #expect(timedOut.code == .timedOut)
            try await e2e.expectHangsEnded(1)
            // Without a timeout, so that only the cancellation ends it.
            let patient = Client(baseURL: e2e.server.baseURL, transport: transport, middleware: [.counting(counter)])
            let cancelled = Task { try await patient.send(Request<Data>.get("/hang", query: ["key": .init(e2e.key)])) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1, "hangsEnded": 1])
            #expect(counter.snapshot.inFlight == 1)
            cancelled.cancel()
            _ = try? await cancelled.join()
            await counter.waitUntilIdle()
            let counts = counter.snapshot
            #expect(counts.inFlight == 0)
            #expect(counts.started == 4)
            #expect(counts.succeeded == 1)
            #expect(counts.failed == 2)
            #expect(counts.cancelled == 1)
        }
    }
}
