// The example of the "Testing code that uses Courier" article, as Swift Testing tests: an app's service
// with retry and token renewal of its own, tested with CourierTesting. The app's code (`AccountService`,
// `Session`, `Client.accountAPI`, …) is compiled from Snippets/TestingExample.swift itself, through the link
// TestingExample.swift next to this file; this target defines COURIER_TESTING_EXAMPLE_TESTS, which leaves
// out the snippet's entry point.

import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// `base` (https://api.example.com) and `ada` (the profile the API returns) come from the snippet too.

@Suite("Example: AccountService's retry and token renewal")
struct AccountServiceTests {
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
        let session = Session(accessToken: "a1", refreshToken: "r1")
        let client = Client.accountAPI(baseURL: base, session: session, transport: TestTransport(), clock: clock)
        let service = AccountService(client: client)

        let profile = try await clock.run { try await service.profile() }

        #expect(profile == ada)
        #expect(clock.now.offset == .seconds(7))  // 5 s as the server asked, then 2 s of backoff
    }

    @Test(
        "waits for Retry-After, then backs off, step by step",
        .timeLimit(.minutes(1)),
        .mockTransport {
            MockRoute.get("/me")
                .replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .networkConnectionLost, .json(ada))
        }
    )
    func backoffSchedule() async throws {
        let clock = ManualClock()
        let session = Session(accessToken: "a1", refreshToken: "r1")
        let service = AccountService(
            client: .accountAPI(baseURL: base, session: session, transport: TestTransport(), clock: clock)
        )
        let call = Task { try await service.profile() }

        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [.init(offset: .seconds(5))])
        clock.advance(by: .seconds(5))

        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [.init(offset: .seconds(7))])
        clock.advance(by: .seconds(2))

        #expect(try await call.join() == ada)
        #expect(MockTransport.current?.requests.count == 3)
    }

    @Test(
        "gives up after three attempts with the last status",
        .mockTransport { MockRoute.get("/me").replies(.serviceUnavailable()).expectCalls(3) }
    )
    func givesUp() async throws {
        let clock = ManualClock()
        let session = Session(accessToken: "a1", refreshToken: "r1")
        let service = AccountService(
            client: .accountAPI(baseURL: base, session: session, transport: TestTransport(), clock: clock)
        )

        let error = await #expect(throws: CourierError.self) { try await clock.run { try await service.profile() } }

        #expect(error?.statusCode == 503)
        #expect(clock.now.offset == .seconds(3))  // 1 s, then 2 s
    }

    @Test(
        "renews a rejected token once and retries with it",
        .mockTransport {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada))
            MockRoute.get("/me").replies(.unauthorized())
            MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
        }
    )
    func renewsToken() async throws {
        let session = Session(accessToken: "stale", refreshToken: "r1")
        let service = AccountService(client: .accountAPI(baseURL: base, session: session, transport: TestTransport()))

        #expect(try await service.profile() == ada)

        let api = try #require(MockTransport.current)
        #expect(api.requests.map(\.path) == ["/me", "/oauth/token", "/me"])
        #expect(
            api.requests(matching: .get, "/me").map { $0.header("Authorization") } == ["Bearer stale", "Bearer fresh"]
        )
        let renewal = try #require(api.requests(matching: .post, "/oauth/token").first)
        #expect(renewal.formItems.contains(URLQueryItem(name: "refresh_token", value: "r1")))
    }

    @Test(
        "twenty concurrent 401s cause one renewal",
        .timeLimit(.minutes(1)),
        .mockTransport {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada)).expectCalls(20)
            MockRoute.get("/me").replies(.unauthorized()).expectCalls(20)
            MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
        }
    )
    func renewalStorm() async throws {
        let holding = HoldingTransport(wrapping: TestTransport())
        let session = Session(accessToken: "stale", refreshToken: "r1")
        let service = AccountService(client: .accountAPI(baseURL: base, session: session, transport: holding))

        let profiles = try await withThrowingTaskGroup(of: Profile.self) { group in
            for _ in 0..<20 { group.addTask { try await service.profile() } }
            await holding.waitUntilHolding(20)  // all twenty are in flight with the stale token
            holding.open()  // answer them together
            var profiles: [Profile] = []
            for try await profile in group { profiles.append(profile) }
            return profiles
        }

        #expect(profiles == Array(repeating: ada, count: 20))
        #expect(await session.renewals == 1)
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
        let session = Session(accessToken: "a1", refreshToken: "r1")
        let service = AccountService(
            client: .accountAPI(baseURL: base, session: session, transport: chaos, clock: clock)
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
