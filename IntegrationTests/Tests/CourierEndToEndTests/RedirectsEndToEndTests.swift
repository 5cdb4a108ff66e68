import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Redirects across two origins over real sockets", .endToEndLimit(minutes: 3))
struct RedirectsEndToEndTests {
    /// Headers that must not travel to another origin, and one that may.
    static let credentials: HTTPHeaders = [
        "Authorization": "Bearer secret-token",
        "Cookie": "session=abc",
        "Proxy-Authorization": "Basic cHJveHk6cHc=",
        "X-Api-Key": "key-123",
        "X-Tenant-Secret": "tenant-7",
        "X-Plain": "kept",
    ]
    static let strippedOnOriginChange = [
        "authorization", "cookie", "proxy-authorization", "x-api-key", "x-tenant-secret",
    ]

    /// A client that adds ``credentials`` to its requests for `origin` (`.headers` sends a credential header only
    /// to the origins it names), and follows redirects: what a hop to another origin carries is the redirect
    /// layer's doing.
    static func client(_ kind: TransportKind, origin: URL) -> Client {
        Client(
            transport: kind.make(),
            middleware: [
                .headers(credentials, origins: .only(origin)),
                .validatingStatus(),
                .followingRedirects(max: 5, sensitiveHeaders: ["X-Tenant-Secret"]),
            ]
        )
    }

    @Test(
        "The header-stripping matrix: every redirect code, same and cross origin",
        arguments: TransportKind.allCases,
        [301, 302, 303, 307, 308]
    )
    func strippingMatrix(kind: TransportKind, code: Int) async throws {
        try await TestServers.withTwoOrigins { a, b in
            let client = Self.client(kind, origin: a.url("/"))
            for crossOrigin in [false, true] {
                let target = crossOrigin ? b.url("/echo/landed").absoluteString : "/echo/landed"
                var request = URLRequest(url: a.url("/redirect/\(code)", query: ["to": target]))
                request.httpMethod = "POST"
                request.httpBody = Data("payload".utf8)
                request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
                let (data, response) = try await client.send(request)
                #expect(response.statusCode == 200)
                let echo = try JSONDecoder().decode(EchoResponse.self, from: data)
                let context = "\(code) \(crossOrigin ? "cross" : "same") origin"
                #expect(echo.server == (crossOrigin ? "b" : "a"), "\(context)")
                #expect(echo.path == "/echo/landed", "\(context)")
                // 301, 302 and 303 become a GET without a body; 307 and 308 keep the method and the body.
                if code == 307 || code == 308 {
                    #expect(echo.method == "POST", "\(context)")
                    #expect(echo.body == "payload", "\(context)")
                } else {
                    #expect(echo.method == "GET", "\(context)")
                    #expect(echo.bodyLength == 0, "\(context)")
                }
                for name in Self.strippedOnOriginChange {
                    if crossOrigin {
                        #expect(echo.header(name) == nil, "\(name) reached the other origin (\(context))")
                    } else {
                        #expect(echo.header(name) != nil, "\(name) was lost on the same origin (\(context))")
                    }
                }
                #expect(echo.header("x-plain") == "kept", "\(context)")
            }
        }
    }

    @Test(
        "Stripped credentials stay stripped when the chain comes back to the first origin",
        arguments: TransportKind.allCases
    )
    func strippedStayStripped(kind: TransportKind) async throws {
        try await TestServers.withTwoOrigins { a, _ in
            // a → b → a → echo on a.
            let (data, _) = try await Self.client(kind, origin: a.url("/")).send(
                URLRequest(url: a.url("/redirect-chain/2?alternate=1"))
            )
            let echo = try JSONDecoder().decode(EchoResponse.self, from: data)
            #expect(echo.server == "a")
            #expect(echo.header("authorization") == nil)
            #expect(echo.header("cookie") == nil)
            #expect(echo.header("x-plain") == "kept")
        }
    }

    @Test(
        "The authenticating middleware adds no token on a foreign-origin hop, in either order",
        arguments: TransportKind.allCases,
        [true, false]
    )
    func authenticationNeverFollowsToAnotherOrigin(kind: TransportKind, redirectsInnermost: Bool) async throws {
        try await TestServers.withTwoOrigins { a, b in
            let auth = Middleware.authenticating(token: "secret-token")
            let redirects = Middleware.followingRedirects()
            let client = Client(
                baseURL: a.url("/"),
                transport: kind.make(),
                middleware: redirectsInnermost ? [auth, redirects] : [redirects, auth]
            )
            let target = b.url("/echo").absoluteString
            let (data, _) = try await client.send(URLRequest(url: a.url("/redirect/307", query: ["to": target])))
            let echo = try JSONDecoder().decode(EchoResponse.self, from: data)
            #expect(echo.server == "b")
            #expect(echo.header("authorization") == nil)

            // On the same origin the token is there.
            let (sameData, _) = try await client.send(URLRequest(url: a.url("/redirect/307", query: ["to": "/echo"])))
            let same = try JSONDecoder().decode(EchoResponse.self, from: sameData)
            #expect(same.header("authorization") == "Bearer secret-token")
        }
    }

    @Test(
        "A loop across the two origins and a chain past the limit fail with clear errors",
        arguments: TransportKind.allCases
    )
    func loopAndLimit(kind: TransportKind) async throws {
        try await TestServers.withTwoOrigins { a, _ in
            let client = Self.client(kind, origin: a.url("/"))
            let loop = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: a.url("/redirect-loop")))
            }
            #expect(loop.code == .redirectLoop)
            #expect(loop.statusCode == 302)

            let tooMany = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: a.url("/redirect-chain/6")))
            }
            #expect(tooMany.code == .tooManyRedirects)

            // Within the limit, the chain is followed to its end.
            let (data, _) = try await client.send(URLRequest(url: a.url("/redirect-chain/5")))
            #expect(try JSONDecoder().decode(EchoResponse.self, from: data).path == "/echo")
        }
    }
}
