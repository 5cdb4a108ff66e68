// The example of the "Testing code that uses Courier" article, as Swift Testing tests: an app's service with
// Courier's recommended stack (two timeouts, `.retry`, `.authenticating` with a `TokenRefresher`), tested with
// CourierTesting. The app's code (`AccountService`, `Profile`, `TokenResponse`) is compiled from
// Snippets/TestingExample.swift itself, through the link TestingExample.swift next to this file; this target
// defines COURIER_TESTING_EXAMPLE_TESTS, which leaves out the snippet's entry point. The article's blocks that
// use `AccountService` are in this file line for line (TestingArticleTests checks it).

import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// `base` (https://api.example.com) and `ada` (the profile the API returns) come from the snippet too.

@Suite("Example: AccountService's recommended stack", .timeLimit(.minutes(1)))
struct AccountServiceTests {
    @Test(
        "a 503, then a 401: it waits as asked, refreshes the token once, and gets the profile",
        .mockTransport {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada))
            MockRoute.get("/me").replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .unauthorized())
            MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
        }
    )
    func recoversFromA503AndA401() async throws {
        let clock = ManualClock()
        let service = AccountService(
            baseURL: base,
            accessToken: "stale",
            refreshToken: "r1",
            transport: TestTransport(),
            clock: clock
        )

        let profile = try await clock.run { try await service.profile() }

        #expect(profile == ada)
        #expect(clock.now.offset == .seconds(5))  // the Retry-After; neither timeout fired
        #expect(service.auth.refreshCount == 1)
        let api = try #require(MockTransport.current)
        #expect(api.requests.map(\.path) == ["/me", "/me", "/oauth/token", "/me"])
        let authorizations = api.requests(matching: .get, "/me").map { $0.header("Authorization") }
        #expect(authorizations == ["Bearer stale", "Bearer stale", "Bearer fresh"])
    }

    @Test(
        "retries transient failures in virtual time",
        .mockTransport {
            MockRoute.get("/me")
                .replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .networkConnectionLost, .json(ada))
                .expectCalls(3)
        }
    )
    func retries() async throws {
        let clock = ManualClock()
        let service = AccountService(
            baseURL: base,
            accessToken: "a1",
            refreshToken: "r1",
            transport: TestTransport(),
            clock: clock
        )

        let profile = try await clock.run { try await service.profile() }

        #expect(profile == ada)
        #expect(clock.now.offset == .seconds(7))  // 5 s as the server asked, then 2 s of backoff
    }

    @Test(
        "a hung attempt is cut by the per-attempt timeout and sent again",
        .mockTransport { MockRoute.get("/me").replies(.hang, then: .json(ada)).expectCalls(2) }
    )
    func cutsAHungAttempt() async throws {
        let clock = ManualClock()
        let service = AccountService(
            baseURL: base,
            accessToken: "a1",
            refreshToken: "r1",
            transport: TestTransport(),
            clock: clock
        )

        let profile = try await clock.run { try await service.profile() }

        #expect(profile == ada)
        #expect(clock.now.offset == .seconds(6))  // cut at 5 s, then 1 s of backoff
        #expect(MockTransport.current?.cancellationCount == 1)
    }

    @Test(
        "gives up after three attempts with the last status",
        .mockTransport { MockRoute.get("/me").replies(.serviceUnavailable()).expectCalls(3) }
    )
    func givesUp() async throws {
        let clock = ManualClock()
        let service = AccountService(
            baseURL: base,
            accessToken: "a1",
            refreshToken: "r1",
            transport: TestTransport(),
            clock: clock
        )

        let error = await #expect(throws: CourierError.self) { try await clock.run { try await service.profile() } }

        #expect(error?.statusCode == 503)
        #expect(clock.now.offset == .seconds(3))  // 1 s, then 2 s
    }

    @Test(
        "twenty concurrent 401s cause one refresh",
        .mockTransport {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada)).expectCalls(20)
            MockRoute.get("/me").replies(.unauthorized()).expectCalls(20)
            MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
        }
    )
    func refreshStorm() async throws {
        let holding = HoldingTransport(wrapping: TestTransport())
        let service = AccountService(baseURL: base, accessToken: "stale", refreshToken: "r1", transport: holding)

        let profiles = try await withThrowingTaskGroup(of: Profile.self) { group in
            for _ in 0..<20 { group.addTask { try await service.profile() } }
            await holding.waitUntilHolding(20)  // all twenty are in flight with the stale token
            holding.open()  // answer them together
            var profiles: [Profile] = []
            for try await profile in group { profiles.append(profile) }
            return profiles
        }

        #expect(profiles == Array(repeating: ada, count: 20))
        #expect(service.auth.refreshCount == 1)
    }

    @Test(
        "step by step: a retry waits for Retry-After, then backs off",
        .mockTransport {
            MockRoute.get("/me")
                .replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .networkConnectionLost, .json(ada))
        }
    )
    func backoffSchedule() async throws {
        let clock = ManualClock()
        let policy = RetryPolicy(backoff: .exponential(base: .seconds(1), jitter: .none))
        let client = Client(
            baseURL: base,
            transport: TestTransport(),
            middleware: [.retry(policy, clock: clock), .validatingStatus()]
        )
        let call = Task { () async throws -> Profile in try await client.send(.get("/me")) }

        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [.init(offset: .seconds(5))])
        clock.advance(by: .seconds(5))

        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [.init(offset: .seconds(7))])
        clock.advance(by: .seconds(2))

        #expect(try await call.join() == ada)
    }

    @Test("on a flaky network it sends at most three attempts", arguments: 0..<20 as Range<UInt64>)
    func flakyNetwork(seed: UInt64) async throws {
        let api = MockTransport { MockRoute.get("/me").replies(.json(ada)) }
        let chaos = FaultInjectingTransport(
            wrapping: api,
            seed: seed,
            faults: [.droppedConnection(rate: 0.4), .serviceUnavailable(rate: 0.2, retryAfter: .seconds(1))]
        )
        let clock = ManualClock()
        let service = AccountService(
            baseURL: base,
            accessToken: "a1",
            refreshToken: "r1",
            transport: chaos,
            clock: clock
        )

        do {
            let profile = try await clock.run { try await service.profile() }
            #expect(profile == ada)
            #expect(api.requests.count == 1)  // exactly one attempt got through to the server
        } catch let error as CourierError {
            #expect(chaos.requests.count == 3)
            #expect(api.requests.isEmpty)
            #expect(error.code == .transport || error.statusCode == 503)
        }
        #expect(chaos.requests.count <= 3)
        #expect(chaos.requests.count == chaos.injected.count + api.requests.count)
    }
}
