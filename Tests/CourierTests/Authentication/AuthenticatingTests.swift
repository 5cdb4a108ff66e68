import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("authenticating")
struct AuthenticatingTests {
    private struct ProviderFailure: Error, Equatable {}

    @Test("a static token is sent as a bearer token, replacing any Authorization the request had")
    func staticBearer() async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating(token: "abc123")])
        var request = URLRequest(url: testURL)
        request.setValue("Bearer stale", forHTTPHeaderField: "Authorization")
        _ = try await client.send(request)
        #expect(transport.requests.first?.value(forHTTPHeaderField: "Authorization") == "Bearer abc123")
    }

    @Test(
        "the header and scheme are configurable",
        arguments: [
            (AuthorizationScheme.bearer, "Authorization", "Bearer tok"),
            (AuthorizationScheme.token, "Authorization", "Token tok"),
            (AuthorizationScheme.header("X-API-Key"), "X-API-Key", "tok"),
            (AuthorizationScheme(header: "Authorization", scheme: "SSWS"), "Authorization", "SSWS tok"),
            (AuthorizationScheme(header: "Authorization", scheme: nil), "Authorization", "tok"),
        ]
    )
    func schemes(scheme: AuthorizationScheme, header: String, expected: String) async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating(token: "tok", scheme: scheme)])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(transport.requests.first?.value(forHTTPHeaderField: header) == expected)
    }

    @Test(
        "an unusable static token fails before anything is sent, and no message contains it",
        arguments: ["", "private-token\r\nX-Injected: 1", "private-token\n", "private\u{0}token"]
    )
    func badStaticToken(token: String) async throws {
        let transport = MockTransport.ok
        let reached = Locked(0)
        let client = makeClient(transport, [.authenticating(token: token), reachedMarker(reached)])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .invalidRequest)
        #expect(error.middleware == "authenticating")
        #expect(transport.callCount == 0)
        #expect(reached.value == 0)
        #expect(!error.debugDescription.contains("private"))
    }

    @Test(
        "an unusable header name or scheme fails before anything is sent",
        arguments: [
            AuthorizationScheme.header("X Key"),
            AuthorizationScheme.header(""),
            AuthorizationScheme(header: "Authorization", scheme: "Bad Scheme"),
            AuthorizationScheme(header: "Authorization", scheme: "Bearer\r\n"),
        ]
    )
    func badScheme(scheme: AuthorizationScheme) async throws {
        for middleware in [
            Middleware.authenticating(token: "secret-token", scheme: scheme),
            Middleware.authenticating(scheme: scheme) { "secret-token" },
        ] {
            let transport = MockTransport.ok
            let client = makeClient(transport, [middleware])
            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: testURL))
            }
            #expect(error.code == .invalidRequest)
            #expect(error.middleware == "authenticating")
            #expect(transport.callCount == 0)
            #expect(!error.debugDescription.contains("secret-token"))
        }
    }

    @Test("a token provider is asked for every request, and its current token is sent")
    func providerPerRequest() async throws {
        let calls = Locked(0)
        let transport = MockTransport.ok
        let client = makeClient(
            transport,
            [
                .authenticating {
                    let call = calls.increment()
                    return "token-\(call)"
                }
            ]
        )
        _ = try await client.send(URLRequest(url: testURL))
        _ = try await client.send(URLRequest(url: testURL))
        #expect(calls.value == 2)
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer token-1", "Bearer token-2",
            ]
        )
    }

    @Test("a provider's custom header scheme is used")
    func providerScheme() async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating(scheme: .header("X-API-Key")) { "key-1" }])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(transport.requests.first?.value(forHTTPHeaderField: "X-API-Key") == "key-1")
        #expect(transport.requests.first?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test("a provider's error is passed on unchanged and nothing is sent")
    func providerThrows() async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating { throw ProviderFailure() }])
        await #expect(throws: ProviderFailure()) { try await client.send(URLRequest(url: testURL)) }
        #expect(transport.callCount == 0)
    }

    @Test("a provider's cancellation stays a CancellationError")
    func providerCancelled() async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating { throw CancellationError() }])
        await #expect(throws: CancellationError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(transport.callCount == 0)
    }

    @Test(
        "an unusable provided token fails before anything is sent, and no message contains it",
        arguments: ["", "provided-secret\r\nX-Injected: 1"]
    )
    func badProvidedToken(token: String) async throws {
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating { token }])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .invalidRequest)
        #expect(error.middleware == "authenticating")
        #expect(transport.callCount == 0)
        #expect(!error.debugDescription.contains("provided-secret"))
    }

    @Test("a rejected request's error does not show the token")
    func tokenNotInStatusError() async throws {
        let client = makeClient(
            MockTransport(.status(401, body: "bad token")),
            [.authenticating(token: "s3cr3t-bearer-token"), .validatingStatus()]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.statusCode == 401)
        expectNoSecrets(error.debugDescription)
        expectNoSecrets(String(reflecting: error))
    }
}
