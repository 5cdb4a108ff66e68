// Testing code that uses Courier: retry and token refresh, checked in virtual time.
//
// The app's `AccountService` loads the signed-in user's profile through a `Client` with two
// middleware of the app's own: `retryingTransientFailures` (a 503 waits for `Retry-After`, a dropped
// connection backs off 1 s, 2 s, …, on an injected clock) and `bearerAuthentication` (sends the
// session's token; on a 401 renews it once — one renewal for any number of concurrent 401s — and sends
// the request again).
//
// The second half tests it with CourierTesting, with no network and no real sleeping:
// - a routed `MockTransport` plays the API, with scripted replies and call-count expectations;
// - `withTestTransport` installs it for the code under test (in a Swift Testing suite, the
//   `.mockTransport` trait does this for each test and fails the test on unmet expectations);
// - a `ManualClock` runs the backoff in virtual time;
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

/// The signed-in user's tokens. Concurrent callers that saw the same token rejected share one renewal.
actor Session {
    private(set) var accessToken: String
    private(set) var renewals = 0
    private let refreshToken: String
    private var renewing: Task<String, any Error>?

    init(accessToken: String, refreshToken: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    /// Returns a token to use instead of `rejected`, renewing it through `tokenClient` at most once.
    func renew(rejected: String, using tokenClient: Client) async throws -> String {
        if accessToken != rejected { return accessToken }  // another request renewed it already
        if let renewing { return try await renewing.value }
        let form = ["grant_type": "refresh_token", "refresh_token": refreshToken]
        let task = Task { () async throws -> String in
            let response: TokenResponse = try await tokenClient.send(.post("/oauth/token", body: .form(form)))
            return response.accessToken
        }
        renewing = task
        defer { renewing = nil }
        accessToken = try await task.value
        renewals += 1
        return accessToken
    }
}

extension Middleware {
    /// Sends idempotent requests again after a 503 (waiting the server's `Retry-After`) or a dropped
    /// connection (waiting `base`, then twice as long each time), up to `attempts` in all.
    static func retryingTransientFailures(
        attempts: Int = 3,
        base: Duration = .seconds(1),
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Middleware {
        Middleware(name: "retry") { request, next in
            let idempotent = HTTPMethod(rawValue: request.httpMethod ?? "GET").isIdempotent
            var attempt = 1
            while true {
                var delay = base * (1 << (attempt - 1))
                do {
                    let (data, response) = try await next(request)
                    guard response.statusCode == 503, idempotent, attempt < attempts else { return (data, response) }
                    if let seconds = response.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init) {
                        delay = .seconds(seconds)
                    }
                } catch let error as CourierError where error.code == .transport && idempotent && attempt < attempts {
                    // The connection dropped before an answer came: back off and try again.
                }
                try await clock.sleep(for: delay)
                attempt += 1
            }
        }
    }

    /// Sends the session's token; on a 401, renews it and sends the request once more.
    static func bearerAuthentication(_ session: Session, renewingWith tokenClient: Client) -> Middleware {
        Middleware(name: "auth") { request, next in
            var request = request
            let token = await session.accessToken
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await next(request)
            guard response.statusCode == 401 else { return (data, response) }
            let renewed = try await session.renew(rejected: token, using: tokenClient)
            request.setValue("Bearer \(renewed)", forHTTPHeaderField: "Authorization")
            return try await next(request)
        }
    }
}

extension Client {
    /// The app's API client. Retry is outside authentication, so every attempt carries the current token;
    /// the token client has no authentication, so renewing never passes through it.
    static func accountAPI(
        baseURL: URL,
        session: Session,
        transport: any Transport = URLSessionTransport(),
        clock: some Clock<Duration> = ContinuousClock()
    ) -> Client {
        let tokenClient = Client(baseURL: baseURL, transport: transport)
        return Client(
            baseURL: baseURL,
            transport: transport,
            middleware: [
                .retryingTransientFailures(clock: clock),
                .bearerAuthentication(session, renewingWith: tokenClient),
            ]
        )
    }
}

struct AccountService: Sendable {
    let client: Client

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

/// Retry: a 503 with Retry-After, then a dropped connection, then the profile.
func retriesTransientFailures() async throws {
    let clock = ManualClock()
    let api = MockTransport {
        MockRoute.get("/me")
            .replies(.serviceUnavailable(retryAfter: .seconds(5)), then: .networkConnectionLost, .json(ada))
            .expectCalls(3)
    }
    let session = Session(accessToken: "a1", refreshToken: "r1")
    let service = AccountService(
        client: .accountAPI(baseURL: base, session: session, transport: TestTransport(), clock: clock)
    )
    // In a Swift Testing suite, `@Test(.mockTransport { … })` installs the mock for the test instead.
    let profile = try await withTestTransport(api) {
        // Moves the clock to each backoff's deadline as soon as the service sleeps.
        try await clock.run { try await service.profile() }
    }
    check(profile == ada, "the profile arrives on the third attempt")
    check(clock.now.offset == .seconds(7), "it waited 5 s as the server asked, then backed off 2 s")
    check(api.requests.map(\.path) == ["/me", "/me", "/me"], "it sent the same request three times")
    check(api.unmetExpectations.isEmpty, "every expectation of the mock is met")
}

/// Auth: the stored token is stale; the service renews it once and retries with the new one.
func renewsARejectedToken() async throws {
    let api = MockTransport {
        MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada))
        MockRoute.get("/me").replies(.unauthorized())
        MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
    }
    let session = Session(accessToken: "stale", refreshToken: "r1")
    let service = AccountService(client: .accountAPI(baseURL: base, session: session, transport: TestTransport()))
    let profile = try await withTestTransport(api) { try await service.profile() }
    let authorizations = api.requests(matching: .get, "/me").map { $0.header("Authorization") }
    let renewal = api.requests(matching: .post, "/oauth/token").first
    check(profile == ada, "the profile arrives")
    check(authorizations == ["Bearer stale", "Bearer fresh"], "the retry carries the renewed token")
    check(renewal?.formItems.contains(URLQueryItem(name: "refresh_token", value: "r1")) == true, "it renewed with r1")
    check(api.unmetExpectations.isEmpty, "the token endpoint was called exactly once")
}

/// A storm: 20 requests fail with 401 together; one renewal serves them all.
func twentyConcurrent401sCauseOneRenewal() async throws {
    let api = MockTransport {
        MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(ada)).expectCalls(20)
        MockRoute.get("/me").replies(.unauthorized()).expectCalls(20)
        MockRoute.post("/oauth/token").replies(.json(TokenResponse(accessToken: "fresh"))).expectCalls(1)
    }
    let holding = HoldingTransport(wrapping: api)
    let session = Session(accessToken: "stale", refreshToken: "r1")
    let service = AccountService(client: .accountAPI(baseURL: base, session: session, transport: holding))
    let profiles = try await withThrowingTaskGroup(of: Profile.self) { group in
        for _ in 0..<20 { group.addTask { try await service.profile() } }
        await holding.waitUntilHolding(20)  // all 20 are in flight with the stale token
        holding.open()  // answer them together, and let everything after through
        var profiles: [Profile] = []
        for try await profile in group { profiles.append(profile) }
        return profiles
    }
    check(profiles == Array(repeating: ada, count: 20), "all twenty get the profile")
    check(await session.renewals == 1, "the session renewed its token once")
    check(api.unmetExpectations.isEmpty, "20 rejected, 20 retried, 1 renewal")
}

// snippet.hide
/// Runs the three checks; exits with status 1 when one of them failed.
func runChecks() async throws {
    print("Retries transient failures in virtual time")
    try await retriesTransientFailures()
    print("Renews a rejected token and retries with it")
    try await renewsARejectedToken()
    print("Twenty concurrent 401s cause one renewal")
    try await twentyConcurrent401sCauseOneRenewal()
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
