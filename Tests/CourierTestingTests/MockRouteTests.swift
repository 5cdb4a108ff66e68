import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct User: Codable, Equatable, Sendable {
    var id: String
    var name: String
}

struct NewUser: Codable, Equatable, Sendable {
    var name: String
}

let testBase = URL(string: "https://api.example.test")!

func request(_ method: HTTPMethod, _ path: String, headers: [String: String] = [:], body: Data? = nil) -> URLRequest {
    var request = URLRequest(url: URL(string: path, relativeTo: testBase)!.absoluteURL)
    request.httpMethod = method.rawValue
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body
    return request
}

@Suite("MockRoute and routed MockTransport")
struct MockRouteTests {
    @Test("a :name segment captures the path parameter for the handler")
    func pathParameters() async throws {
        let api = MockTransport {
            MockRoute.get("/users/:id/posts/:post") { request in
                .json(["user": request.parameters["id"]!, "post": request.parameters["post"]!])
            }
        }
        let client = Client(baseURL: testBase, transport: api)
        let body: [String: String] = try await client.send(.get("/users/a%20b/posts/7"))
        #expect(body == ["user": "a b", "post": "7"])
    }

    @Test(
        "patterns match whole paths segment by segment",
        arguments: [
            ("/users/:id", "/users/42", true),
            ("/users/:id", "/users", false),
            ("/users/:id", "/users/42/posts", false),
            ("/users/*/posts", "/users/42/posts", true),
            ("/files/**", "/files", true),
            ("/files/**", "/files/a/b/c", true),
            ("/files/**", "/other/a", false),
            ("/users/", "/users", true),
            ("/v1/users:batchGet", "/v1/users:batchGet", true),
            ("/v1/users:batchGet", "/v1/users", false),
        ]
    )
    func patterns(pattern: String, path: String, matches: Bool) async throws {
        let api = MockTransport(unmatched: .status(404)) { MockRoute.get(pattern) }
        let status = try await api.send(request(.get, path)).1.statusCode
        #expect(status == (matches ? 200 : 404))
    }

    @Test("the method must match unless the route is for any method")
    func methods() async throws {
        let api = MockTransport(unmatched: .status(404)) {
            MockRoute.post("/users").replies(.status(201))
            MockRoute.any("/anything").replies(.status(202))
        }
        #expect(try await api.send(request(.post, "/users")).1.statusCode == 201)
        #expect(try await api.send(request(.get, "/users")).1.statusCode == 404)
        #expect(try await api.send(request(.delete, "/anything")).1.statusCode == 202)
        #expect(try await api.send(request(.patch, "/anything")).1.statusCode == 202)
    }

    @Test("a route replies with its sequence in order and then repeats the last reply")
    func sequence() async throws {
        let api = MockTransport {
            MockRoute.post("/login").replies(.status(401), then: .status(429), .json(["token": "t"]))
        }
        var statuses: [Int] = []
        for _ in 0..<5 { statuses.append(try await api.send(request(.post, "/login")).1.statusCode) }
        #expect(statuses == [401, 429, 200, 200, 200])
        #expect(api.routeCallCounts == [5])
    }

    @Test("routes are tried in order, so a narrower route written first wins")
    func order() async throws {
        let api = MockTransport {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(["name": "Ada"]))
            MockRoute.get("/me").replies(.unauthorized())
        }
        let stale = try await api.send(request(.get, "/me", headers: ["Authorization": "Bearer stale"]))
        let fresh = try await api.send(request(.get, "/me", headers: ["Authorization": "Bearer fresh"]))
        let none = try await api.send(request(.get, "/me"))
        #expect(stale.1.statusCode == 401)
        #expect(stale.1.value(forHTTPHeaderField: "WWW-Authenticate") == "Bearer")
        #expect(fresh.1.statusCode == 200)
        #expect(none.1.statusCode == 401)
        #expect(api.routeCallCounts == [1, 2])
    }

    @Test("a condition takes the route's answer as a trailing closure: matchingHeader, matchingQuery, matchingBody")
    func conditionWithTrailingHandler() async throws {
        let api = MockTransport(unmatched: .status(404)) {
            MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh") { request in
                .text("fresh on call \(request.callIndex)")
            }
            MockRoute.get("/me").matchingHeader("Authorization") { _ in .unauthorized() }
            MockRoute.get("/search").matchingQuery("q") { request in .text("q=\(request.queryValue("q") ?? "")") }
            MockRoute.post("/users").matchingBody(NewUser(name: "Ada")) { _ in .json(User(id: "1", name: "Ada")) }
        }
        let client = Client(baseURL: testBase, transport: api)
        let fresh = try await api.send(request(.get, "/me", headers: ["Authorization": "Bearer fresh"]))
        #expect(String(decoding: fresh.0, as: UTF8.self) == "fresh on call 0")
        #expect(
            try await api.send(request(.get, "/me", headers: ["Authorization": "Bearer stale"])).1.statusCode == 401
        )
        // The condition still applies: without the header, no route matches.
        #expect(try await api.send(request(.get, "/me")).1.statusCode == 404)
        let search: String = try await client.send(.get("/search", query: ["q": "swift"]))
        #expect(search == "q=swift")
        let created: User = try await client.send(.post("/users", json: NewUser(name: "Ada")))
        #expect(created == User(id: "1", name: "Ada"))
        #expect(try await api.send(request(.get, "/search")).1.statusCode == 404)
    }

    @Test("query conditions come from the pattern or from matchingQuery")
    func query() async throws {
        let api = MockTransport(unmatched: .status(404)) {
            MockRoute.get("/search?q=swift").replies(.text("swift results"))
            MockRoute.get("/search").matchingQuery("q", "a b").replies(.text("spaced results"))
            MockRoute.get("/search").matchingQuery("page").replies(.text("any page"))
        }
        let client = Client(baseURL: testBase, transport: api)
        let swift: String = try await client.send(.get("/search", query: ["q": "swift", "x": "1"]))
        let spaced: String = try await client.send(.get("/search", query: ["q": "a b"]))
        let paged: String = try await client.send(.get("/search", query: ["page": "3"]))
        #expect(swift == "swift results")
        #expect(spaced == "spaced results")
        #expect(paged == "any page")
        #expect(try await api.send(request(.get, "/search?q=rust")).1.statusCode == 404)
    }

    @Test("matchingBody matches requests whose JSON body equals the value")
    func bodyCondition() async throws {
        let api = MockTransport(unmatched: .status(400)) {
            MockRoute.post("/users").matchingBody(NewUser(name: "Ada")).replies(.json(User(id: "1", name: "Ada")))
        }
        let client = Client(baseURL: testBase, transport: api)
        let created: User = try await client.send(.post("/users", json: NewUser(name: "Ada")))
        #expect(created == User(id: "1", name: "Ada"))
        await #expect(throws: CourierError.self) {
            let _: User = try await client.send(.post("/users", json: NewUser(name: "Bob")))
        }
    }

    @Test("a custom condition sees the request")
    func customCondition() async throws {
        let api = MockTransport(unmatched: .status(404)) {
            MockRoute.get("/items").matching("has If-None-Match") { $0.header("If-None-Match") != nil }
                .replies(.status(304))
        }
        #expect(try await api.send(request(.get, "/items", headers: ["If-None-Match": "\"v1\""])).1.statusCode == 304)
        #expect(try await api.send(request(.get, "/items")).1.statusCode == 404)
    }

    @Test("a handler sees each call's index on its route and can throw")
    func handler() async throws {
        let api = MockTransport {
            MockRoute.get("/flaky") { request in
                if request.callIndex < 2 { throw URLError(.networkConnectionLost) }
                return .text("call \(request.callIndex)")
            }
        }
        for _ in 0..<2 {
            await #expect(throws: URLError.self) { try await api.send(request(.get, "/flaky")) }
        }
        let (data, _) = try await api.send(request(.get, "/flaky"))
        #expect(String(decoding: data, as: UTF8.self) == "call 2")
    }

    @Test("the builder takes if, for and lists of routes")
    func builder() async throws {
        let includeAdmin = false
        let extra = [MockRoute.get("/extra")]
        let api = MockTransport {
            for id in 1...3 {
                MockRoute.get("/users/\(id)").replies(.json(User(id: "\(id)", name: "user \(id)")))
            }
            if includeAdmin {
                MockRoute.get("/admin")
            } else {
                MockRoute.get("/admin").replies(.status(403))
            }
            extra
        }
        #expect(api.routes.map(\.path) == ["/users/1", "/users/2", "/users/3", "/admin", "/extra"])
        #expect(try await api.send(request(.get, "/admin")).1.statusCode == 403)
    }

    @Test("an unmatched request fails with a message listing the request and the routes")
    func unmatchedMessage() async throws {
        let api = MockTransport {
            MockRoute.get("/users/:id").replies(.json(User(id: "1", name: "Ada")))
            MockRoute.post("/login").matchingHeader("Authorization")
        }
        _ = try await api.send(request(.get, "/users/1"))
        let error = await #expect(throws: MockTransportError.self) {
            try await api.send(request(.delete, "/users/1?token=s3cret", headers: ["Authorization": "Bearer s3cret"]))
        }
        let message = try #require(error?.message)
        #expect(message.contains("no route matches DELETE /users/1?token=REDACTED"))
        #expect(message.contains("GET /users/:id — called once"))
        #expect(message.contains("POST /login [Authorization: <redacted>] — called 0 times"))
        #expect(message.contains("Authorization: <redacted>"))
        #expect(!message.contains("s3cret"))
        #expect(api.unmatchedRequests.map(\.path) == ["/users/1"])
        #expect(api.unmetExpectations == ["unexpected request DELETE /users/1?token=REDACTED: no route matches"])
    }

    @Test("with an unmatched reply, unmatched requests get it and are not expectation failures")
    func unmatchedReply() async throws {
        let api = MockTransport(unmatched: .status(404)) { MockRoute.get("/known") }
        #expect(try await api.send(request(.get, "/unknown")).1.statusCode == 404)
        #expect(api.unmatchedRequests.count == 1)
        #expect(api.unmetExpectations.isEmpty)
    }

    @Test("expectCalls reports routes called too few or too many times")
    func expectations() async throws {
        let api = MockTransport {
            MockRoute.post("/token").expectCalls(1)
            MockRoute.get("/a").expectCalls(2...3)
            MockRoute.get("/b").expectCalls(1...)
            MockRoute.get("/c").expectCalls(0)
        }
        _ = try await api.send(request(.post, "/token"))
        _ = try await api.send(request(.post, "/token"))
        _ = try await api.send(request(.get, "/a"))
        _ = try await api.send(request(.get, "/c"))
        #expect(
            api.unmetExpectations == [
                "POST /token expected exactly 1 call, got 2 calls",
                "GET /a expected 2...3 calls, got 1 call",
                "GET /b expected at least 1 call, got 0 calls",
                "GET /c expected exactly 0 calls, got 1 call",
            ]
        )
        api.reset()
        _ = try await api.send(request(.post, "/token"))
        _ = try await api.send(request(.get, "/a"))
        _ = try await api.send(request(.get, "/a"))
        _ = try await api.send(request(.get, "/b"))
        #expect(api.unmetExpectations.isEmpty)
        #expect(api.requests.count == 4)
    }

    @Test(
        "each spelling matches its method only, and answers with its handler when given one",
        arguments: [
            (MockRoute.get, HTTPMethod.get), (MockRoute.post, .post), (MockRoute.put, .put),
            (MockRoute.patch, .patch), (MockRoute.delete, .delete), (MockRoute.head, .head),
        ] as [(@Sendable (String, MockHandler?) -> MockRoute, HTTPMethod)]
    )
    func spellings(spelling: @Sendable (String, MockHandler?) -> MockRoute, method: HTTPMethod) async throws {
        let plain = MockTransport(unmatched: .status(404)) { spelling("/r", nil) }
        let handled = MockTransport(unmatched: .status(404)) { spelling("/r") { _ in .status(201) } }
        for other in [HTTPMethod.get, .post, .put, .patch, .delete, .head] {
            let expected = other == method
            #expect(try await plain.send(request(other, "/r")).1.statusCode == (expected ? 200 : 404))
            #expect(try await handled.send(request(other, "/r")).1.statusCode == (expected ? 201 : 404))
        }
        #expect(spelling("/r", nil).method == method)
        #expect(spelling("/r", nil).path == "/r")
    }

    @Test("MockRoute(_:_:_:) makes a route for a method, or any method, with one answer")
    func coreInitializer() async throws {
        let api = MockTransport {
            [
                MockRoute(.get, "/users/42", .json(User(id: "42", name: "Ada"))),
                MockRoute(nil, "/health"),
                MockRoute.any("/echo") { request in .text(request.method.rawValue) },
            ]
        }
        let client = Client(baseURL: testBase, transport: api)
        let user: User = try await client.send(.get("/users/42"))
        #expect(user.name == "Ada")
        #expect(try await api.send(request(.head, "/health")).1.statusCode == 200)
        #expect(String(decoding: try await api.send(request(.patch, "/echo")).0, as: UTF8.self) == "PATCH")
        #expect(api.routes.map(\.description) == ["GET /users/42", "* /health", "* /echo"])
    }
}
