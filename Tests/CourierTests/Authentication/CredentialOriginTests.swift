import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A credential goes to the base URL's origin only: a request that names another origin (a pre-signed link,
/// a CDN) goes out without it, and that origin's `401` costs no refresh.
@Suite("Credentials stay on their origins", .timeLimit(.minutes(1)))
struct CredentialOriginTests {
    static let base = URL(string: "https://api.example.test/v1")!
    static let secret = "k-0123456789"

    /// How the credential is attached.
    enum Kind: String, CaseIterable, NamedByRawValue, Sendable {
        case staticToken, provider, refresher

        func middleware(_ scheme: AuthorizationScheme, refresher: TokenRefresher? = nil) -> Middleware {
            switch self {
            case .staticToken: .authenticating(token: CredentialOriginTests.secret, scheme: scheme)
            case .provider: .authenticating(scheme: scheme) { CredentialOriginTests.secret }
            case .refresher:
                .authenticating(with: refresher ?? CredentialOriginTests.refresher(), scheme: scheme)
            }
        }
    }

    static func refresher() -> TokenRefresher {
        TokenRefresher(token: .init(secret)) { _ in .init("k-refreshed-0123") }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let kind: Kind
        let header: String
        let url: String
        var testDescription: String { "\(kind.rawValue), \(header), \(url)" }

        /// Other origins than `https://api.example.test`: another host, port, scheme, and a host that only
        /// starts like the API's.
        static let foreignURLs = [
            "https://cdn.other.test/report.csv?X-Amz-Signature=abc",
            "https://api.example.test:8443/v1/items",
            "http://api.example.test/v1/items",
            "https://api.example.test.evil.test/v1/items",
        ]

        static let all: [Case] = Kind.allCases.flatMap { kind in
            ["Authorization", "X-API-Key"].flatMap { header in
                foreignURLs.map { Case(kind: kind, header: header, url: $0) }
            }
        }
    }

    private static func scheme(_ header: String) -> AuthorizationScheme {
        header == "Authorization" ? .bearer : .header(header)
    }

    @Test("a request to another origin than the base URL's goes out without the credential", arguments: Case.all)
    func foreignOriginGetsNoCredential(_ item: Case) async throws {
        let transport = MockTransport.ok
        let client = Client(
            baseURL: Self.base,
            transport: transport,
            middleware: [item.kind.middleware(Self.scheme(item.header))]
        )
        _ = try await client.send(URLRequest(url: URL(string: item.url)!))
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: item.header) == nil)
        #expect(!(sent.allHTTPHeaderFields ?? [:]).values.contains { $0.contains(Self.secret) })
    }

    @Test("a typed request with an absolute URL elsewhere goes out without the credential", arguments: Kind.allCases)
    func typedRequestElsewhere(_ kind: Kind) async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: Self.base, transport: transport, middleware: [kind.middleware(.bearer)])
        let _: Data = try await client.send(.get("https://cdn.other.test/report.csv"))
        let sent = try #require(transport.requests.first)
        #expect(sent.url?.host == "cdn.other.test")
        #expect(sent.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test(
        "the base URL's origin gets the credential, whatever the case of its host and with the default port written",
        arguments: Kind.allCases
    )
    func baseOriginGetsCredential(_ kind: Kind) async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: Self.base, transport: transport, middleware: [kind.middleware(.bearer)])
        let _: Data = try await client.send(.get("/items"))
        _ = try await client.send(URLRequest(url: URL(string: "https://API.Example.test:443/other")!))
        let sent = transport.requests
        try #require(sent.count == 2)
        for request in sent {
            #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer \(Self.secret)")
        }
    }

    @Test("a 401 from another origin is passed on and refreshes nothing")
    func foreignRejectionRefreshesNothing() async throws {
        let transport = MockTransport { request in
            request.urlRequest.url?.host == "cdn.other.test" ? .status(401) : .status(200)
        }
        let refresher = Self.refresher()
        let client = Client(
            baseURL: Self.base,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        let (_, response) = try await client.send(URLRequest(url: URL(string: "https://cdn.other.test/a.csv")!))
        #expect(response.statusCode == 401)
        #expect(refresher.refreshCount == 0)
        #expect(transport.callCount == 1)
        #expect(transport.requests.first?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test("origins named with .baseURL(and:) get the credential too; others still do not", arguments: Kind.allCases)
    func namedOriginsAllowed(_ kind: Kind) async throws {
        let transport = MockTransport.ok
        let origins = CredentialOrigins.baseURL(and: URL(string: "https://uploads.example.test/ignored/path")!)
        let middleware: Middleware =
            switch kind {
            case .staticToken: .authenticating(token: Self.secret, origins: origins)
            case .provider: .authenticating(origins: origins) { Self.secret }
            case .refresher: .authenticating(with: Self.refresher(), origins: origins)
            }
        let client = Client(baseURL: Self.base, transport: transport, middleware: [middleware])
        for url in ["https://api.example.test/a", "https://UPLOADS.example.test/b", "https://cdn.other.test/c"] {
            _ = try await client.send(URLRequest(url: URL(string: url)!))
        }
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }
        #expect(sent == ["Bearer \(Self.secret)", "Bearer \(Self.secret)", nil])
    }

    @Test(".only names the origins whatever the base URL is, and works without one")
    func onlyOrigins() async throws {
        let transport = MockTransport.ok
        let only = CredentialOrigins.only(URL(string: "http://127.0.0.1:8080")!)
        let client = Client(transport: transport, middleware: [.authenticating(token: Self.secret, origins: only)])
        _ = try await client.send(URLRequest(url: URL(string: "http://127.0.0.1:8080/x")!))
        _ = try await client.send(URLRequest(url: URL(string: "http://127.0.0.1:8081/x")!))
        _ = try await client.send(URLRequest(url: URL(string: "http://127.0.0.1/x")!))
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }
        #expect(sent == ["Bearer \(Self.secret)", nil, nil])

        let based = Client(
            baseURL: Self.base,
            transport: transport,
            middleware: [.authenticating(token: "t-0123456789", origins: only)]
        )
        _ = try await based.send(URLRequest(url: Self.base))
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test(
        "a client without a base URL and a .baseURL credential fails before anything is sent, and says what to do",
        arguments: Kind.allCases
    )
    func noBaseURLFailsLoudly(_ kind: Kind) async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [kind.middleware(.bearer)])
        let error = try await #require(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!))
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("no base URL"))
        #expect(error.message.contains(".only"))
        #expect(transport.callCount == 0)
        #expect(!error.debugDescription.contains(Self.secret))
    }

    @Test("an origin URL without a scheme or host makes every request fail before anything is sent")
    func unusableOrigin() async throws {
        let transport = MockTransport.ok
        let origins = CredentialOrigins.baseURL(and: URL(string: "uploads.example.test")!)
        let client = Client(
            baseURL: Self.base,
            transport: transport,
            middleware: [.authenticating(token: Self.secret, origins: origins)]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: Self.base)) }
        #expect(error.code == .invalidRequest)
        #expect(transport.callCount == 0)
    }

    @Test("a custom middleware applies the same rule with CredentialOrigins.allows(_:through:)")
    func customMiddleware() async throws {
        let transport = MockTransport.ok
        let tenantKey = Middleware(name: "tenant-key") { request, next in
            guard try CredentialOrigins.baseURL.allows(request, through: next) else { return try await next(request) }
            var request = request
            request.setValue("tenant-0123456789", forHTTPHeaderField: "X-Tenant-Key")
            return try await RedirectContext.sendingCredential(in: "X-Tenant-Key") { try await next(request) }
        }
        let client = Client(baseURL: Self.base, transport: transport, middleware: [tenantKey])
        _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!))
        _ = try await client.send(URLRequest(url: URL(string: "https://cdn.other.test/a")!))
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "X-Tenant-Key") }
        #expect(sent == ["tenant-0123456789", nil])
    }

    @Test("a redirect to another origin named in origins: still carries no credential")
    func redirectToNamedOriginStripped() async throws {
        let transport = MockTransport { request in
            request.urlRequest.url?.host == "api.example.test"
                ? .status(307, headers: ["Location": "https://uploads.example.test/put"]) : .status(200)
        }
        let origins = CredentialOrigins.baseURL(and: URL(string: "https://uploads.example.test")!)
        for order in [true, false] {
            let auth = Middleware.authenticating(token: Self.secret, scheme: .header("X-API-Key"), origins: origins)
            let client = Client(
                baseURL: Self.base,
                transport: transport,
                middleware: order ? [auth, .followingRedirects()] : [.followingRedirects(), auth]
            )
            _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/start")!))
        }
        let hops = transport.requests.filter { $0.url?.host == "uploads.example.test" }
        try #require(hops.count == 2)
        #expect(hops.allSatisfy { $0.value(forHTTPHeaderField: "X-API-Key") == nil })
    }
}

/// URLs spelled to look like the base URL's origin, or to hide another origin behind it: the credential goes to
/// a spelling of the same scheme, host and port, and to nothing else. Where two spellings may reach one server
/// but are not equal (a trailing dot, an IPv6 address written out), the credential stays home: failing closed.
@Suite("Credential origins against tricky spellings", .timeLimit(.minutes(1)))
struct CredentialOriginSpellingTests {
    static let secret = "k-0123456789"

    /// The URLs sent, and whether each should carry the credential.
    static let httpsCases: [(String, Bool)] = [
        ("https://API.Example.TEST/v1/a", true),
        ("https://api.example.test:443/v1/a", true),
        ("https://user:pw@api.example.test/v1/a", true),
        ("https://api.example.test./v1/a", false),
        ("https://api.example.test@evil.test/v1/a", false),
        ("https://api.example.test:443@evil.test/v1/a", false),
        ("https://evil.test#@api.example.test/v1/a", false),
        ("https://evil.test?@api.example.test/v1/a", false),
        ("https://api.example.test:80/v1/a", false),
        ("https://api.example.test:8443/v1/a", false),
        ("http://api.example.test/v1/a", false),
        ("http://api.example.test:443/v1/a", false),
        ("wss://api.example.test/v1/a", false),
        ("https://api.example.test%2eevil.test/v1/a", false),
        ("https://evil.test%2fapi.example.test/v1/a", false),
        ("https://xn--api-example-test/v1/a", false),
    ]

    private static func sent(
        base: String,
        urls: [String],
        origins: CredentialOrigins = .baseURL
    ) async throws -> [String] {
        let transport = MockTransport.ok
        let client = Client(
            baseURL: URL(string: base)!,
            transport: transport,
            middleware: [.authenticating(token: secret, origins: origins)]
        )
        var carrying: [String] = []
        for url in urls {
            let request = try #require(URL(string: url), "\(url)")
            _ = try await client.send(URLRequest(url: request))
            if transport.requests.last?.value(forHTTPHeaderField: "Authorization") != nil { carrying.append(url) }
        }
        return carrying
    }

    @Test("host case, default and explicit ports, userinfo, fragments, schemes and encodings")
    func httpsSpellings() async throws {
        let carrying = try await Self.sent(base: "https://api.example.test/v1", urls: Self.httpsCases.map(\.0))
        #expect(carrying == Self.httpsCases.filter(\.1).map(\.0))
    }

    @Test("IPv6 literals: the same address in the same spelling, with any port spelling, and nothing else")
    func ipv6() async throws {
        let cases: [(String, Bool)] = [
            ("http://[::1]:8080/a", true),
            ("http://[::1]:08080/a", true),
            ("http://[::1]/a", false),
            ("http://[::2]:8080/a", false),
            ("https://[::1]:8080/a", false),
            ("http://[0:0:0:0:0:0:0:1]:8080/a", false),
            ("http://127.0.0.1:8080/a", false),
        ]
        let carrying = try await Self.sent(base: "http://[::1]:8080", urls: cases.map(\.0))
        #expect(carrying == cases.filter(\.1).map(\.0))
    }

    @Test("a base URL in upper case with an explicit default port names the same origin; a trailing dot does not")
    func baseSpelling() async throws {
        let carrying = try await Self.sent(
            base: "HTTPS://API.EXAMPLE.TEST:443/",
            urls: ["https://api.example.test/a", "https://api.example.test./a"]
        )
        #expect(carrying == ["https://api.example.test/a"])
    }

    @Test(".only with an http origin does not allow the https one of the same host, nor the reverse")
    func schemesApart() async throws {
        let carrying = try await Self.sent(
            base: "https://other.test",
            urls: ["http://api.example.test/a", "https://api.example.test/a", "http://api.example.test:80/b"],
            origins: .only(URL(string: "http://api.example.test")!)
        )
        #expect(carrying == ["http://api.example.test/a", "http://api.example.test:80/b"])
    }
}
