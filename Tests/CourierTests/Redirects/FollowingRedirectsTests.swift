import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Following redirects", .timeLimit(.minutes(1)))
struct FollowingRedirectsTests {
    static let start = URL(string: "http://api.example.test/start")!

    /// Where a redirect from `http://api.example.test/start` points.
    enum Destination: String, CaseIterable, NamedByRawValue {
        case relativePath
        case sameOriginAbsolute
        case sameOriginWithDefaultPortAndUpperCaseHost
        case otherPort
        case otherHost
        case otherScheme

        var location: String {
            switch self {
            case .relativePath: "/landing"
            case .sameOriginAbsolute: "http://api.example.test/landing"
            case .sameOriginWithDefaultPortAndUpperCaseHost: "http://API.Example.test:80/landing"
            case .otherPort: "http://api.example.test:8080/landing"
            case .otherHost: "http://other.example.test/landing"
            case .otherScheme: "https://api.example.test/landing"
            }
        }

        var isCrossOrigin: Bool {
            switch self {
            case .relativePath, .sameOriginAbsolute, .sameOriginWithDefaultPortAndUpperCaseHost: false
            case .otherPort, .otherHost, .otherScheme: true
            }
        }
    }

    /// A sensitive header and a value for it.
    struct Sensitive: CustomTestStringConvertible, Sendable {
        let name: String
        let value: String

        var testDescription: String { name }

        static let all = [
            Sensitive(name: "Authorization", value: "Bearer s3cr3t"),
            Sensitive(name: "Cookie", value: "session=abc"),
            Sensitive(name: "Proxy-Authorization", value: "Basic cHJveHk6cHc="),
            Sensitive(name: "X-Api-Key", value: "key-123"),
            Sensitive(name: "X-Tenant-Key", value: "tenant-9"),
        ]
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let destination: Destination
        let header: Sensitive

        var testDescription: String { "\(header.name) → \(destination.rawValue)" }

        static let all = Destination.allCases.flatMap { destination in
            Sensitive.all.map { Case(destination: destination, header: $0) }
        }
    }

    static let redirectCodes = [301, 302, 303, 307, 308]

    /// A transport that answers each request whose host and path (`host/path`) `hops` lists with that status and
    /// `Location`, and any other request with 200.
    static func redirecting(_ hops: [String: (status: Int, location: String)]) -> MockTransport {
        MockTransport { request in
            guard let url = request.url, let hop = hops["\(url.host ?? "")\(url.path)"] else { return .ok }
            return .status(hop.status, headers: ["Location": hop.location])
        }
    }

    private func redirecting(_ status: Int, to location: String) -> MockTransport {
        MockTransport {
            MockRoute.any("/start").replies(.status(status, headers: ["Location": location]))
            MockRoute.any("/landing").replies(.status(200, body: "landed"))
        }
    }

    /// Sends `request` through `.followingRedirects()` to a transport that answers it `status` to `/landing`, and
    /// returns the transport.
    private func follow(_ status: Int, sending request: URLRequest) async throws -> MockTransport {
        let transport = redirecting(status, to: "/landing")
        _ = try await Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        ).send(request)
        return transport
    }

    /// A request to ``start`` with `method`, and a JSON body if given one.
    private func start(_ method: String, json body: String? = nil) -> URLRequest {
        var request = URLRequest(url: Self.start)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    @Test(
        "sensitive headers survive a same-origin hop and are removed on a change of scheme, host or port",
        arguments: Case.all,
        redirectCodes
    )
    func headerStrippingMatrix(testCase: Case, status: Int) async throws {
        let transport = redirecting(status, to: testCase.destination.location)
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects(sensitiveHeaders: ["x-tenant-key"])]
        )
        var request = URLRequest(url: Self.start)
        request.setValue(testCase.header.value, forHTTPHeaderField: testCase.header.name)
        request.setValue("trace-1", forHTTPHeaderField: "X-Request-ID")

        let (data, response) = try await client.send(request)

        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "landed")
        #expect(transport.callCount == 2)
        let hop = try #require(transport.requests.last)
        let expectedURL = URL(string: testCase.destination.location, relativeTo: Self.start)!.absoluteURL
        #expect(hop.url == expectedURL)
        let forwarded = hop.value(forHTTPHeaderField: testCase.header.name)
        if testCase.destination.isCrossOrigin {
            #expect(forwarded == nil)
        } else {
            #expect(forwarded == testCase.header.value)
        }
        #expect(hop.value(forHTTPHeaderField: "X-Request-ID") == "trace-1")
    }

    @Test("301, 302 and 303 turn a POST into a GET without body or body headers", arguments: [301, 302, 303])
    func seeOtherDropsBody(status: Int) async throws {
        var request = start("POST", json: #"{"a":1}"#)
        request.setValue("7", forHTTPHeaderField: "Content-Length")
        request.setValue("application/json", forHTTPHeaderField: "Accept")

        let transport = try await follow(status, sending: request)

        let hop = try #require(transport.requests.last)
        #expect(transport.callCount == 2)
        #expect(hop.httpMethod == "GET")
        #expect(hop.httpBody == nil)
        #expect(hop.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(hop.value(forHTTPHeaderField: "Content-Length") == nil)
        #expect(hop.value(forHTTPHeaderField: "Accept") == "application/json")
    }

    @Test("307 and 308 send the same method, body and Content-Type again", arguments: [307, 308])
    func temporaryKeepsBody(status: Int) async throws {
        let transport = try await follow(status, sending: start("PUT", json: #"{"a":1}"#))

        let hop = try #require(transport.requests.last)
        #expect(hop.httpMethod == "PUT")
        #expect(hop.httpBody == Data(#"{"a":1}"#.utf8))
        #expect(hop.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test("HEAD stays HEAD through a 301 or 303", arguments: [301, 303])
    func headStaysHead(status: Int) async throws {
        let transport = try await follow(status, sending: start("HEAD"))
        #expect(transport.requests.map(\.httpMethod) == ["HEAD", "HEAD"])
    }

    @Test(
        "a relative Location is resolved against the URL of the request that got it",
        arguments: [
            ("c", "http://api.example.test/a/b/c"),
            ("../c", "http://api.example.test/a/c"),
            ("/c?x=1", "http://api.example.test/c?x=1"),
            ("?page=2", "http://api.example.test/a/b/start?page=2"),
            ("//other.example.test/c", "http://other.example.test/c"),
            (" https://api.example.test/secure ", "https://api.example.test/secure"),
        ]
    )
    func relativeLocation(location: String, expected: String) async throws {
        let transport = MockTransport(.status(302, headers: ["Location": location]), then: .ok)
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        _ = try await client.send(URLRequest(url: URL(string: "http://api.example.test/a/b/start")!))
        #expect(transport.requests.last?.url?.absoluteString == expected)
    }

    @Test("https → http is refused with insecureRedirect and nothing is sent over http")
    func insecureRefused() async throws {
        let transport = MockTransport(
            .status(302, headers: ["Location": "http://api.example.test/plain?access_token=leaked-value"]),
            then: .ok
        )
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        let error = try await #require(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "https://api.example.test/start")!))
        }
        #expect(error.code == .insecureRedirect)
        #expect(error.statusCode == 302)
        #expect(error.middleware == "redirects")
        #expect(!String(describing: error).contains("leaked-value"))
        #expect(transport.callCount == 1)
    }

    @Test("allowsInsecureRedirects follows https → http, without the credentials")
    func insecureAllowed() async throws {
        let transport = MockTransport(.status(302, headers: ["Location": "http://api.example.test/plain"]), then: .ok)
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects(allowsInsecureRedirects: true)]
        )
        var request = URLRequest(url: URL(string: "https://api.example.test/start")!)
        request.setValue("Bearer s3cr3t", forHTTPHeaderField: "Authorization")
        let (_, response) = try await client.send(request)
        #expect(response.statusCode == 200)
        #expect(transport.callCount == 2)
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    /// A transport where `/loop/N` redirects as a table says and anything else answers 200.
    private func chain(_ next: @escaping @Sendable (String) -> String?) -> MockTransport {
        MockTransport { request in
            let path = request.url?.path ?? ""
            guard let location = next(path) else { return .ok }
            return .status(302, headers: ["Location": location])
        }
    }

    @Test("A → B → A fails with redirectLoop after two requests")
    func loop() async throws {
        let transport = chain { $0 == "/a" ? "/b" : $0 == "/b" ? "/a" : nil }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        let error = try await #require(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "http://api.example.test/a")!))
        }
        #expect(error.code == .redirectLoop)
        #expect(transport.requests.map { $0.url?.path } == ["/a", "/b"])
    }

    @Test("a redirect to itself fails with redirectLoop after one request")
    func selfLoop() async throws {
        let transport = chain { $0 == "/a" ? "http://API.example.test:80/a#frag" : nil }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        let error = try await #require(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "http://api.example.test/a")!))
        }
        #expect(error.code == .redirectLoop)
        #expect(transport.callCount == 1)
    }

    @Test("POST /form → 303 → GET /form is not a loop")
    func postRedirectGet() async throws {
        let transport = MockTransport { request in
            request.httpMethod == "POST" ? .status(303, headers: ["Location": "/form"]) : .ok
        }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        var request = URLRequest(url: URL(string: "http://api.example.test/form")!)
        request.httpMethod = "POST"
        let (_, response) = try await client.send(request)
        #expect(response.statusCode == 200)
        #expect(transport.requests.map(\.httpMethod) == ["POST", "GET"])
    }

    @Test("exactly max redirects are followed; one more fails with tooManyRedirects", arguments: [0, 1, 3, 10])
    func maximum(max: Int) async throws {
        // /r0 → /r1 → … → /rN answers 200 when N == max; an endless chain otherwise.
        let withinLimit = chain { path in
            let n = Int(path.dropFirst(2)) ?? 0
            return n < max ? "/r\(n + 1)" : nil
        }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: withinLimit,
            middleware: [.followingRedirects(max: max)]
        )
        let (_, response) = try await client.send(URLRequest(url: URL(string: "http://api.example.test/r0")!))
        #expect(response.statusCode == 200)
        #expect(withinLimit.callCount == max + 1)

        let endless = chain { path in "/r\((Int(path.dropFirst(2)) ?? 0) + 1)" }
        let tooFar = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: endless,
            middleware: [.followingRedirects(max: max)]
        )
        let error = try await #require(throws: CourierError.self) {
            try await tooFar.send(URLRequest(url: URL(string: "http://api.example.test/r0")!))
        }
        #expect(error.code == .tooManyRedirects)
        #expect(error.statusCode == 302)
        #expect(endless.callCount == max + 1)
    }

    @Test(
        "responses that are not followable redirects are returned as they are",
        arguments: [
            MockResponse.status(302),
            MockResponse.status(301, headers: ["Location": ""]),
            MockResponse.status(304, headers: ["Location": "/landing"]),
            MockResponse.status(300, headers: ["Location": "/landing"]),
            MockResponse.status(302, headers: ["Location": "ftp://files.example.test/x"]),
            MockResponse.status(302, headers: ["Location": "file:///etc/passwd"]),
            MockResponse.status(302, headers: ["Location": "http://"]),
        ]
    )
    func notFollowed(reply: MockResponse) async throws {
        let transport = MockTransport(reply, then: .ok)
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        let (_, response) = try await client.send(URLRequest(url: Self.start))
        #expect(response.statusCode == (try await reply.httpResponse(for: URLRequest(url: Self.start))).1.statusCode)
        #expect(transport.callCount == 1)
    }

    @Test("each hop is announced in RedirectContext, and credentials stay off once the chain left its origin")
    func hopContext() async throws {
        let transport = Self.redirecting([
            "api.example.test/start": (302, "/same"),
            "api.example.test/same": (307, "http://other.example.test/x"),
            "other.example.test/x": (308, "http://api.example.test/back"),
        ])
        let seen = Locked<[RedirectHop?]>([])
        let mayAttach = Locked<[Bool]>([])
        let probe = Middleware { request, next in
            seen.withLock { $0.append(RedirectContext.currentHop) }
            mayAttach.withLock { $0.append(RedirectContext.mayAttachCredentials) }
            return try await next(request)
        }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects(), probe]
        )
        _ = try await client.send(URLRequest(url: Self.start))

        let hops = seen.value
        try #require(hops.count == 4)
        #expect(hops[0] == nil)
        #expect(hops[1]?.number == 1)
        #expect(hops[1]?.status == 302)
        #expect(hops[1]?.hasLeftOriginalOrigin == false)
        #expect(hops[2]?.url.absoluteString == "http://other.example.test/x")
        #expect(hops[2]?.hasLeftOriginalOrigin == true)
        #expect(hops[3]?.url.absoluteString == "http://api.example.test/back")
        #expect(hops[3]?.hasLeftOriginalOrigin == true)
        #expect(hops[3]?.originalURL == Self.start)
        #expect(mayAttach.value == [true, true, false, false])
        #expect(RedirectContext.mayAttachCredentials)
    }

    /// A static-token middleware that follows the documented rule for authentication middleware.
    static func bearer(_ token: String) -> Middleware {
        Middleware(name: "auth") { request, next in
            guard RedirectContext.mayAttachCredentials else { return try await next(request) }
            var request = request
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return try await next(request)
        }
    }

    enum Order: String, CaseIterable, NamedByRawValue {
        case redirectsInsideAuthentication
        case redirectsOutsideAuthentication
    }

    /// The authenticating middleware under test: a hand-written one following ``RedirectContext``'s rule, and
    /// the built-in ones.
    enum Authenticator: String, CaseIterable, NamedByRawValue {
        case handWritten
        case staticToken
        case tokenProvider

        var middleware: Middleware {
            switch self {
            case .handWritten: FollowingRedirectsTests.bearer("t0k3n")
            case .staticToken: .authenticating(token: "t0k3n")
            case .tokenProvider: .authenticating { "t0k3n" }
            }
        }
    }

    @Test(
        "the token reaches only the first origin, whichever order authentication and redirects are listed in",
        arguments: Order.allCases,
        Authenticator.allCases
    )
    func authenticationOrder(order: Order, authenticator: Authenticator) async throws {
        let transport = Self.redirecting([
            "api.example.test/start": (307, "/moved"),
            "api.example.test/moved": (302, "http://evil.example.test/x"),
            "evil.example.test/x": (307, "http://api.example.test/admin"),
        ])
        let middleware: [Middleware] =
            switch order {
            case .redirectsInsideAuthentication: [authenticator.middleware, .followingRedirects()]
            case .redirectsOutsideAuthentication: [.followingRedirects(), authenticator.middleware]
            }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: middleware
        )
        _ = try await client.send(URLRequest(url: Self.start))

        let sent = transport.requests.map {
            ($0.url?.absoluteString ?? "", $0.value(forHTTPHeaderField: "Authorization"))
        }
        try #require(sent.count == 4)
        #expect(sent[0] == ("http://api.example.test/start", "Bearer t0k3n"))
        #expect(sent[1] == ("http://api.example.test/moved", "Bearer t0k3n"))
        #expect(sent[2] == ("http://evil.example.test/x", nil))
        #expect(sent[3] == ("http://api.example.test/admin", nil))
    }

    @Test("cancelling the caller during a hop throws CancellationError, not a wrapped error")
    func cancellationDuringHop() async throws {
        let arrived = Arrivals()
        let transport = MockTransport { request in
            if request.url?.path == "/start" { return .status(302, headers: ["Location": "/slow"]) }
            arrived.arrive()
            try await waitForCancellation()
            return .ok
        }
        let client = Client(
            baseURL: URL(string: "http://api.example.test")!,
            transport: transport,
            middleware: [.followingRedirects()]
        )
        await expectCancellation(sending: URLRequest(url: Self.start), through: client, arrived: arrived)
    }

    @Test(
        "isSameOrigin compares scheme, host and effective port",
        arguments: [
            ("http://a.test/x", "http://A.TEST:80/y", true),
            ("https://a.test/x", "https://a.test:443/", true),
            ("http://a.test/x", "https://a.test/x", false),
            ("http://a.test/x", "http://a.test:8080/x", false),
            ("http://a.test/x", "http://b.test/x", false),
            ("http://a.test/x", "/relative", false),
        ]
    )
    func sameOrigin(lhs: String, rhs: String, expected: Bool) {
        #expect(RedirectContext.isSameOrigin(URL(string: lhs)!, URL(string: rhs)!) == expected)
    }
}
