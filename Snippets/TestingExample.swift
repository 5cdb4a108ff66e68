// Testing code that uses Courier: the recommended stack (retry, token refresh, timeouts), checked in virtual
// time.
//
// The app's `AccountService` loads the signed-in user's profile through a `Client` with Courier's recommended
// stack: a timeout for the whole call, `.retry` (a 503 waits for `Retry-After`, a dropped connection backs off
// 1 s, 2 s, …), `.authenticating` with a `TokenRefresher` (on a 401 it refreshes the token once — one refresh
// for any number of concurrent 401s — and sends the request again), a timeout per attempt, and status
// validation. Every layer that waits takes the clock the app is given.
//
// The second half tests it with CourierTesting, with no network and no real sleeping:
// - a routed `MockTransport` plays the API, with scripted replies and call-count expectations;
// - `withTestTransport` installs it for the code under test (in a Swift Testing suite, the
//   `.mockTransport` trait does this for each test and fails the test on unmet expectations);
// - a `ManualClock` runs the backoff, the timeouts and the token's expiry in virtual time;
// - a `HoldingTransport` holds 20 requests in flight at once to check that a storm of 401s causes one
//   token refresh.
//
// Run it with `swift run TestingExample`. The same app code, compiled from this very file, is tested with
// Swift Testing in Tests/CourierTestingTests/Examples/AccountServiceTests.swift.

// snippet.hide
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
// snippet.show

// MARK: The app's code

struct Profile: Codable, Equatable, Sendable {
    var id: Int
    var name: String
}

struct TokenResponse: Codable, Sendable {
    var accessToken: String
}

struct AccountService: Sendable {
    let client: Client
    /// The signed-in user's access token, refreshed with `refreshToken` when it expires or is rejected.
    let auth: TokenRefresher

    /// The service with Courier's recommended stack. Tests pass a mock transport and a `ManualClock`; every
    /// layer that waits (the two timeouts, the retry's backoff, the token's expiry) uses `clock`.
    init(
        baseURL: URL,
        accessToken: String,
        refreshToken: String,
        transport: any Transport = URLSessionTransport(),
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        // The token endpoint has a client of its own, without authentication, so a refresh never waits for
        // itself.
        let tokens = Client(baseURL: baseURL, transport: transport, middleware: [.validatingStatus()])
        auth = TokenRefresher(token: .init(accessToken, expiresIn: .seconds(3600)), clock: clock) { _ in
            let form = ["grant_type": "refresh_token", "refresh_token": refreshToken]
            let response: TokenResponse = try await tokens.send(.post("/oauth/token", body: .form(form)))
            return .init(response.accessToken, expiresIn: .seconds(3600))
        }
        // 3 attempts; backoff 1 s, then 2 s, without jitter (Retry-After, when the server sends it, wins).
        let retry = RetryPolicy(backoff: .exponential(base: .seconds(1), jitter: .none))
        client = Client(
            baseURL: baseURL,
            transport: transport,
            middleware: [
                .timeout(.seconds(30), clock: clock),
                .retry(retry, clock: clock),
                .authenticating(with: auth),
                .timeout(.seconds(5), clock: clock),
                .validatingStatus(),
            ]
        )
    }

    func profile() async throws -> Profile {
        try await client.send(.get("/me"))
    }
}

// MARK: Testing it

// snippet.hide
let base = URL(string: "https://api.example.com")!
let ada = Profile(id: 1, name: "Ada")
let failures = Locked(0)

/// Prints one check; a failed check makes the program exit with status 1 at the end.
func check(_ condition: Bool, _ what: String) {
    print(condition ? "  ✓ \(what)" : "  ✗ \(what)")
    if !condition { failures.withLock { $0 += 1 } }
}
// snippet.show

/// The recommended stack at work: a 503 that asks to wait 5 s, then a 401 for the stale token, one refresh,
/// and the profile with the fresh token.
func recoversFromA503AndA401() async throws {
    let clock = ManualClock()
    let api = MockTransport {
        MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada))
        MockRoute.get("/me").replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .unauthorized()).expectCalls(2)
        MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
    }
    let service = AccountService(
        baseURL: base,
        accessToken: "stale",
        refreshToken: "r1",
        transport: TestTransport(),
        clock: clock
    )
    // In a Swift Testing suite, `@Test(.mockTransport { … })` installs the mock for the test instead.
    let profile = try await withTestTransport(api) {
        // Moves the clock to the earliest deadline each time the service only waits for it.
        try await clock.run { try await service.profile() }
    }
    let authorizations = api.requests(matching: .get, "/me").map { $0.header("Authorization") }
    let refresh = api.requests(matching: .post, "/oauth/token").first
    check(profile == ada, "the profile arrives")
    check(clock.now.offset == .seconds(5), "it waited the 5 s the server asked for, and no timeout fired")
    check(authorizations == ["Bearer stale", "Bearer stale", "Bearer fresh"], "the last try carries the new token")
    check(service.auth.refreshCount == 1, "one refresh")
    check(refresh?.formItems.contains(URLQueryItem(name: "refresh_token", value: "r1")) == true, "with r1")
    check(api.unmetExpectations.isEmpty, "every expectation of the mock is met")
}

/// Retry: a 503 with Retry-After, then a dropped connection, then the profile.
func retriesTransientFailures() async throws {
    let clock = ManualClock()
    let api = MockTransport {
        MockRoute.get("/me")
            .replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .networkConnectionLost, .json(ada))
            .expectCalls(3)
    }
    let service = AccountService(
        baseURL: base,
        accessToken: "a1",
        refreshToken: "r1",
        transport: TestTransport(),
        clock: clock
    )
    let profile = try await withTestTransport(api) { try await clock.run { try await service.profile() } }
    check(profile == ada, "the profile arrives on the third attempt")
    check(clock.now.offset == .seconds(7), "it waited 5 s as the server asked, then backed off 2 s")
    check(api.requests.map(\.path) == ["/me", "/me", "/me"], "it sent the same request three times")
}

/// Timeouts: the first attempt hangs; the per-attempt timeout cuts it at 5 s and the retry sends it again.
func cutsAHungAttempt() async throws {
    let clock = ManualClock()
    let api = MockTransport { MockRoute.get("/me").replies(.hang, then: .json(ada)).expectCalls(2) }
    let service = AccountService(
        baseURL: base,
        accessToken: "a1",
        refreshToken: "r1",
        transport: TestTransport(),
        clock: clock
    )
    let profile = try await withTestTransport(api) { try await clock.run { try await service.profile() } }
    check(profile == ada, "the profile arrives on the second attempt")
    check(clock.now.offset == .seconds(6), "the attempt was cut at 5 s, then the retry backed off 1 s")
    check(api.cancellationCount == 1, "the hung attempt was cancelled")
}

/// A storm: 20 requests fail with 401 together; one refresh serves them all.
func twentyConcurrent401sCauseOneRefresh() async throws {
    let api = MockTransport {
        MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada)).expectCalls(20)
        MockRoute.get("/me").replies(.unauthorized()).expectCalls(20)
        MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
    }
    let holding = HoldingTransport(wrapping: api)
    let service = AccountService(baseURL: base, accessToken: "stale", refreshToken: "r1", transport: holding)
    let profiles = try await withThrowingTaskGroup(of: Profile.self) { group in
        for _ in 0..<20 { group.addTask { try await service.profile() } }
        await holding.waitUntilHolding(20)  // all 20 are in flight with the stale token
        holding.open()  // answer them together, and let everything after through
        var profiles: [Profile] = []
        for try await profile in group { profiles.append(profile) }
        return profiles
    }
    check(profiles == Array(repeating: ada, count: 20), "all twenty get the profile")
    check(service.auth.refreshCount == 1, "the token was refreshed once")
    check(api.unmetExpectations.isEmpty, "20 rejected, 20 sent again, 1 refresh")
}

// snippet.hide
/// Runs the checks; exits with status 1 when one of them failed.
func runChecks() async throws {
    print("Recovers from a 503 and a 401 with one refresh, in virtual time")
    try await recoversFromA503AndA401()
    print("Retries transient failures in virtual time")
    try await retriesTransientFailures()
    print("Cuts a hung attempt and tries again")
    try await cutsAHungAttempt()
    print("Twenty concurrent 401s cause one refresh")
    try await twentyConcurrent401sCauseOneRefresh()
    if failures.value > 0 {
        print("\(failures.value) check(s) failed")
        exit(1)
    }
    print("All checks passed")
}

// CourierTestingTests compiles this file too, for the app code its tests check
// (Tests/CourierTestingTests/Examples/AccountServiceTests.swift), and defines the flag. A test target may
// hold no top-level statements, not even in a block `#if` leaves out, so the program's one step is written
// as a declaration: in a snippet, top-level declarations run in order.
#if !COURIER_TESTING_EXAMPLE_TESTS
let ran: Void = try await runChecks()
#endif
// snippet.show
