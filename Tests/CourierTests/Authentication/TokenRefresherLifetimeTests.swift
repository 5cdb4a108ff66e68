import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When a token with a known lifetime is refreshed before sending: a token just received is always usable.
@Suite("TokenRefresher: token lifetimes and the leeway", .timeLimit(.minutes(1)))
struct TokenRefresherLifetimeTests {
    /// A refresher whose refresh returns `v2`, `v3`, … each with `lifetime`, and a client using it over a server
    /// that accepts every token.
    private static func setUp(
        first: Duration?,
        lifetime: Duration?,
        leeway: Duration = .seconds(30),
        clock: ManualClock
    ) -> (refresher: TokenRefresher, client: Client, transport: MockTransport) {
        let calls = Locked(1)
        let refresher = TokenRefresher(token: .init("v1", expiresIn: first), leeway: leeway, clock: clock) { _ in
            let version = calls.increment()
            return .init("v\(version)", expiresIn: lifetime)
        }
        let transport = MockTransport.ok
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        return (refresher, client, transport)
    }

    @Test("issue 13 #8: a 30 s token with the default 30 s leeway serves 10 sequential requests without a refresh")
    func lifetimeEqualToTheLeeway() async throws {
        let clock = ManualClock()
        let (refresher, client, transport) = Self.setUp(first: .seconds(30), lifetime: .seconds(30), clock: clock)

        for _ in 0..<10 { _ = try await client.send(authenticatedRequest()) }
        #expect(refresher.refreshCount == 0)
        #expect(transport.requests.map(bearer) == Array(repeating: "Bearer v1", count: 10))

        clock.advance(by: .seconds(15))  // half of its life is gone: refreshed before the next request
        for _ in 0..<10 { _ = try await client.send(authenticatedRequest()) }
        #expect(refresher.refreshCount == 1)
        #expect(transport.requests.suffix(10).map(bearer) == Array(repeating: "Bearer v2", count: 10))
    }

    /// A token is refreshed before sending once `min(leeway, lifetime / 2)` is left of its lifetime.
    @Test(
        "with a 30 s leeway, a token is used for max(lifetime / 2, lifetime - 30 s), then refreshed once",
        arguments: [
            (Duration.seconds(1), Duration.milliseconds(500)),
            (.seconds(30), .seconds(15)),
            (.seconds(60), .seconds(30)),
            (.seconds(3600), .seconds(3570)),
        ]
    )
    func refreshPoint(lifetime: Duration, usedFor: Duration) async throws {
        let clock = ManualClock()
        let (refresher, client, transport) = Self.setUp(first: lifetime, lifetime: lifetime, clock: clock)

        /// Sends at once, just before the refresh point and at it: only the last one refreshes first.
        func useUntilRefreshed(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let refreshes = refresher.refreshCount
            _ = try await client.send(authenticatedRequest())
            clock.advance(by: usedFor - .milliseconds(1))
            _ = try await client.send(authenticatedRequest())
            #expect(refresher.refreshCount == refreshes, sourceLocation: sourceLocation)
            clock.advance(by: .milliseconds(1))
            _ = try await client.send(authenticatedRequest())
            #expect(refresher.refreshCount == refreshes + 1, sourceLocation: sourceLocation)
        }

        try await useUntilRefreshed()
        // The token just received gets the same rule: used for the same time again, not refreshed at once.
        try await useUntilRefreshed()
        #expect(transport.requests.map(bearer) == ["v1", "v1", "v2", "v2", "v2", "v3"].map { "Bearer \($0)" })
        #expect(refresher.token.expiresIn == lifetime)
    }

    @Test("a short leeway is not stretched: a 1 h token with a 10 s leeway is used for 3590 s")
    func shortLeeway() async throws {
        let clock = ManualClock()
        let (refresher, client, _) = Self.setUp(
            first: .seconds(3600),
            lifetime: .seconds(3600),
            leeway: .seconds(10),
            clock: clock
        )
        clock.advance(by: .seconds(3589))
        _ = try await client.send(authenticatedRequest())
        #expect(refresher.refreshCount == 0)
        clock.advance(by: .seconds(1))
        _ = try await client.send(authenticatedRequest())
        #expect(refresher.refreshCount == 1)
    }

    @Test(
        "a refreshed token that arrives already expired is used until the server rejects it, not refreshed in a loop",
        arguments: [Duration.zero, .seconds(-5)]
    )
    func refreshedTokenArrivesExpired(lifetime: Duration) async throws {
        let clock = ManualClock()
        // The stored token expired while the program was not running: refreshed once, before its first use.
        let (refresher, client, transport) = Self.setUp(first: .seconds(-60), lifetime: lifetime, clock: clock)

        for _ in 0..<10 { _ = try await client.send(authenticatedRequest()) }
        #expect(refresher.refreshCount == 1)
        #expect(transport.requests.map(bearer) == Array(repeating: "Bearer v2", count: 10))
        #expect(try await refresher.validToken().value == "v2")
        #expect(refresher.refreshCount == 1)
        #expect(refresher.token.expiresIn == lifetime)
    }

    @Test("a token stored with setToken that arrives already expired is used until the server rejects it")
    func setTokenArrivesExpired() async throws {
        let clock = ManualClock()
        let (refresher, client, transport) = Self.setUp(first: nil, lifetime: .seconds(3600), clock: clock)
        await refresher.setToken(.init("signed-in", expiresIn: .zero))

        for _ in 0..<3 { _ = try await client.send(authenticatedRequest()) }
        #expect(refresher.refreshCount == 0)
        #expect(transport.requests.map(bearer) == Array(repeating: "Bearer signed-in", count: 3))
    }

    @Test("a token whose lifetime is unknown is never refreshed before sending")
    func unknownLifetime() async throws {
        let clock = ManualClock()
        let (refresher, client, _) = Self.setUp(first: nil, lifetime: nil, clock: clock)
        clock.advance(by: .seconds(1_000_000))
        _ = try await client.send(authenticatedRequest())
        #expect(refresher.refreshCount == 0)
        #expect(refresher.token.expiresIn == nil)
    }

    @Test("validToken() follows the same rule: a 20 s token with a 30 s leeway is returned as it is for 10 s")
    func validTokenFollowsTheRule() async throws {
        let clock = ManualClock()
        let (refresher, _, _) = Self.setUp(first: .seconds(20), lifetime: .seconds(20), clock: clock)
        #expect(try await refresher.validToken() == .init("v1", expiresIn: .seconds(20)))
        clock.advance(by: .seconds(9))
        #expect(try await refresher.validToken() == .init("v1", expiresIn: .seconds(11)))
        clock.advance(by: .seconds(1))
        #expect(try await refresher.validToken() == .init("v2", expiresIn: .seconds(20)))
        #expect(refresher.refreshCount == 1)
    }

    @Test("an early refresh that fails leaves the unexpired token in use; once it has expired, the failure is reported")
    func failedEarlyRefresh() async throws {
        struct TokenServerDown: Error {}
        let clock = ManualClock()
        let refresher = TokenRefresher(token: .init("v1", expiresIn: .seconds(60)), clock: clock) { _ in
            throw TokenServerDown()
        }
        let transport = MockTransport.ok
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )

        clock.advance(by: .seconds(40))  // due for an early refresh, 20 s left
        _ = try await client.send(authenticatedRequest())
        #expect(try await refresher.validToken().value == "v1")
        #expect(refresher.refreshCount == 2)
        #expect(transport.requests.map(bearer) == ["Bearer v1"])

        clock.advance(by: .seconds(20))  // expired now: nothing valid is left to send
        let error = try await #require(throws: CourierError.self) {
            try await client.send(authenticatedRequest())
        }
        #expect(error.code == .refreshFailed)
        #expect(transport.callCount == 1)
    }
}
