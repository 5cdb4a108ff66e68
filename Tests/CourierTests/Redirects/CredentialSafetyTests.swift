import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Credentials never reach another origin, and another origin's rejection never costs a refresh: the
/// authentication layers tell the redirect layer what they attached, whatever the header is called.
@Suite("Credentials and redirects", .timeLimit(.minutes(1)))
struct CredentialSafetyTests {
    static let api = URL(string: "https://api.example.test/start")!

    /// How the credential is attached.
    enum Kind: String, CaseIterable, NamedByRawValue, Sendable {
        case staticToken, provider, refresher

        func middleware(_ scheme: AuthorizationScheme) -> Middleware {
            switch self {
            case .staticToken: .authenticating(token: "k-0123456789", scheme: scheme)
            case .provider: .authenticating(scheme: scheme) { "k-0123456789" }
            case .refresher:
                .authenticating(
                    with: TokenRefresher(token: .init("k-0123456789")) { _ in .init("k-new") },
                    scheme: scheme
                )
            }
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let kind: Kind
        let header: String
        let status: Int
        var testDescription: String { "\(kind.rawValue), \(header), \(status)" }

        static let all: [Case] = Kind.allCases.flatMap { kind in
            ["X-Access-Token", "X-Session-Token", "Api-Token", "Authorization"].flatMap { header in
                [301, 302, 303, 307, 308].map { Case(kind: kind, header: header, status: $0) }
            }
        }
    }

    /// A transport on two origins: the API redirects `/start` to `location`, everything else answers 200.
    private static func twoOrigins(status: Int, location: String) -> MockTransport {
        MockTransport { request in
            if request.url?.host == "api.example.test" && request.url?.path == "/start" {
                return .status(status, headers: ["Location": location])
            }
            return .status(200, body: "landed")
        }
    }

    @Test("a credential in any header is removed on a hop to another origin", arguments: Case.all)
    func customHeaderStripped(_ item: Case) async throws {
        let transport = Self.twoOrigins(status: item.status, location: "https://other.example.test/steal")
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [item.kind.middleware(.header(item.header)), .validatingStatus(), .followingRedirects()]
        )
        _ = try await client.send(URLRequest(url: Self.api))
        let requests = transport.requests
        try #require(requests.count == 2)
        #expect(requests[0].value(forHTTPHeaderField: item.header) == "k-0123456789")
        #expect(requests[1].url?.host == "other.example.test")
        #expect(requests[1].value(forHTTPHeaderField: item.header) == nil)
        let values = (requests[1].allHTTPHeaderFields ?? [:]).values
        #expect(!values.contains { $0.contains("k-0123456789") })
    }

    @Test("a credential stays on a hop to the same origin")
    func sameOriginKeepsCredential() async throws {
        let transport = Self.twoOrigins(status: 302, location: "/landing")
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [
                .authenticating(token: "k-0123456789", scheme: .header("X-Access-Token")), .followingRedirects(),
            ]
        )
        _ = try await client.send(URLRequest(url: Self.api))
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "X-Access-Token") } == [
                "k-0123456789", "k-0123456789",
            ]
        )
    }

    @Test("a custom middleware's credential is removed when it says which header carries it")
    func customMiddlewareCredential() async throws {
        let transport = Self.twoOrigins(status: 307, location: "https://other.example.test/steal")
        let apiKey = Middleware(name: "api-key") { request, next in
            var request = request
            request.setValue("tenant-secret", forHTTPHeaderField: "X-Tenant")
            return try await RedirectContext.sendingCredential(in: "X-Tenant") { try await next(request) }
        }
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [apiKey, .followingRedirects()])
        _ = try await client.send(URLRequest(url: Self.api))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Tenant") } == ["tenant-secret", nil])
    }

    // MARK: A rejection from another origin

    /// The README's stack, over a transport where `POST /orders` is answered with a redirect chain whose
    /// last response is a 401 from whatever origin `chain` ends at.
    private struct ForeignRejection {
        let transport: MockTransport
        let refresher = TokenRefresher(token: .init("token-v1-abcdef")) { _ in .init("token-v2-abcdef") }
        let client: Client

        init(chain: [String: (Int, String?)]) {
            transport = MockTransport { request in
                let key = "\(request.url!.host!)\(request.url!.path)"
                guard let (status, location) = chain[key] else { return .status(404) }
                if let location { return .status(status, headers: ["Location": location]) }
                return .status(status, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
            }
            client = Client(
                baseURL: exampleBaseURL,
                transport: transport,
                middleware: RecommendedStackTests.readmeStack(counter: RequestCounter(), auth: refresher)
            )
        }

        func post() async -> (any Error)? {
            var request = URLRequest(url: URL(string: "https://api.example.test/orders")!)
            request.httpMethod = "POST"
            request.httpBody = Data("{}".utf8)
            do {
                _ = try await client.send(request)
                return nil
            } catch {
                return error
            }
        }

        var sent: [String] {
            transport.requests.map { "\($0.httpMethod ?? "GET") \($0.url!.host!)\($0.url!.path)" }
        }
    }

    @Test("a 401 from another origin after a redirect refreshes nothing and sends the POST once")
    func foreignRejectionAfterSeeOther() async throws {
        let scenario = ForeignRejection(chain: [
            "api.example.test/orders": (303, "https://other.example.test/confirm"),
            "other.example.test/confirm": (401, nil),
        ])
        let error = try #require(await scenario.post() as? CourierError)
        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == 401)
        #expect(error.redactedURL == "https://other.example.test/confirm")
        #expect(scenario.sent == ["POST api.example.test/orders", "GET other.example.test/confirm"])
        #expect(scenario.refresher.refreshCount == 0)
    }

    @Test("a 401 after a chain that left the origin and came back refreshes nothing: the credential was removed")
    func rejectionAfterReturningToTheOrigin() async throws {
        let scenario = ForeignRejection(chain: [
            "api.example.test/orders": (303, "https://other.example.test/bounce"),
            "other.example.test/bounce": (302, "https://api.example.test/final"),
            "api.example.test/final": (401, nil),
        ])
        let error = try #require(await scenario.post() as? CourierError)
        #expect(error.statusCode == 401)
        #expect(
            scenario.sent == [
                "POST api.example.test/orders", "GET other.example.test/bounce", "GET api.example.test/final",
            ]
        )
        #expect(
            scenario.transport.requests.allSatisfy {
                $0.url?.path == "/orders" || $0.value(forHTTPHeaderField: "Authorization") == nil
            }
        )
        #expect(scenario.refresher.refreshCount == 0)
    }

    @Test("foreign rejections never use up the refresh limit: a real rejection afterwards still refreshes")
    func foreignRejectionsLeaveTheLimitAlone() async throws {
        let scenario = ForeignRejection(chain: [
            "api.example.test/orders": (303, "https://other.example.test/confirm"),
            "other.example.test/confirm": (401, nil),
        ])
        for _ in 0..<(TokenRefresher.RefreshLimit.default.maximum + 3) {
            _ = await scenario.post()
        }
        #expect(scenario.refresher.refreshCount == 0)
        // The API itself now rejects the first token: exactly one refresh, and the request goes through.
        let transport = MockTransport { request in
            request.header("Authorization") == "Bearer token-v2-abcdef" ? .ok : .status(401)
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: scenario.refresher), .validatingStatus()]
        )
        _ = try await client.send(URLRequest(url: Self.api))
        #expect(scenario.refresher.refreshCount == 1)
    }

    // MARK: The one list of credential headers

    @Test(
        "credential headers the caller set are removed on a hop to another origin, registered names included",
        arguments: ["X-API-Key", "Api-Key", "X-Auth-Token", "X-Goog-Api-Key", "X-Redirect-Registered-Key"]
    )
    func callerCredentialHeadersStripped(header: String) async throws {
        CredentialHeaders.register("X-Redirect-Registered-Key")
        let transport = Self.twoOrigins(status: 307, location: "https://other.example.test/steal")
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.followingRedirects()])
        var request = URLRequest(url: Self.api)
        request.setValue("key-0123456789", forHTTPHeaderField: header)
        request.setValue("kept", forHTTPHeaderField: "X-Request-Id")
        _ = try await client.send(request)
        let requests = transport.requests
        try #require(requests.count == 2)
        #expect(requests[0].value(forHTTPHeaderField: header) == "key-0123456789")
        #expect(requests[1].value(forHTTPHeaderField: header) == nil)
        #expect(requests[1].value(forHTTPHeaderField: "X-Request-Id") == "kept")
    }

    // MARK: Rules see the real response

    @Test("a custom rejection rule sees the real WWW-Authenticate, also when validation sits inside")
    func ruleSeesRealHeaders() async throws {
        let refresher = TokenRefresher(token: .init("token-v1-abcdef")) { _ in .init("token-v2-abcdef") }
        let invalidToken = AuthenticationFailure { response in
            response.value(forHTTPHeaderField: "WWW-Authenticate")?.contains("error=\"invalid_token\"") == true
        }
        let transport = MockTransport { request in
            if request.header("Authorization") == "Bearer token-v2-abcdef" { return .ok }
            return .status(
                403,
                headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\", error_description=\"expired\""]
            )
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher, failure: invalidToken), .validatingStatus()]
        )
        _ = try await client.send(URLRequest(url: Self.api))
        #expect(refresher.refreshCount == 1)
        #expect(transport.callCount == 2)
    }
}
