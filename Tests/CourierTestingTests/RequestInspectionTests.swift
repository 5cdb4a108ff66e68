import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Recorded requests")
struct RequestInspectionTests {
    @Test("a mock lists requests in order with their method, path, query, headers and body")
    func inspection() async throws {
        let recorder = MockTransport.ok
        let client = Client(baseURL: testBase, transport: recorder)
        let _: EmptyResponse = try await client.send(.get("/users", query: ["page": "2", "q": "a b"]))
        let _: EmptyResponse = try await client.send(
            .post("/users", json: NewUser(name: "Ada"), headers: ["Authorization": "Bearer t1"])
        )
        #expect(recorder.requests.map(\.method) == [.get, .post])
        #expect(recorder.requests.map(\.path) == ["/users", "/users"])
        #expect(recorder.firstRequest?.queryValue("q") == "a b")
        #expect(recorder.firstRequest?.queryItems.map(\.name) == ["page", "q"])
        #expect(recorder.firstRequest?.queryValue("missing") == nil)
        #expect(recorder.firstRequest?.httpBody == nil)
        #expect(recorder.firstRequest?.bodyText == nil)
        let last = try #require(recorder.lastRequest)
        #expect(last.header("authorization") == "Bearer t1")
        #expect(last.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(try last.decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
        #expect(last.bodyText == #"{"name":"Ada"}"#)
    }

    @Test("requests(matching:) and requests(to:) filter by method and path pattern")
    func filtering() async throws {
        let api = MockTransport(unmatched: .ok) {}
        for (method, path) in [
            (HTTPMethod.get, "/users/1"), (.post, "/users"), (.get, "/users/2"), (.delete, "/users/1"),
        ] {
            _ = try await api.send(request(method, path))
        }
        #expect(api.requests(matching: .get, "/users/:id").map(\.path) == ["/users/1", "/users/2"])
        #expect(api.requests(matching: .post, "/users").count == 1)
        #expect(api.requests(to: "/users/1").map(\.method) == [.get, .delete])
        #expect(api.requests(matching: .put, "/users/:id").isEmpty)
    }

    @Test("decoding a body that is not there throws a clear error")
    func missingBody() throws {
        let error = #expect(throws: MockTransportError.self) {
            _ = try request(.get, "/users").decodedBody(as: NewUser.self)
        }
        #expect(error?.message == "GET /users has no body to decode as NewUser")
    }

    @Test("a form body reads as items, with + as a space")
    func formItems() async throws {
        let recorder = MockTransport.ok
        let client = Client(baseURL: testBase, transport: recorder)
        let _: EmptyResponse = try await client.send(
            .post("/oauth/token", body: .form(["grant_type": "refresh_token", "refresh_token": "r 1+2"]))
        )
        let items = try #require(recorder.lastRequest?.formItems)
        #expect(
            Dictionary(uniqueKeysWithValues: items.map { ($0.name, $0.value ?? "") }) == [
                "grant_type": "refresh_token", "refresh_token": "r 1+2",
            ]
        )
        let legacy = request(.post, "/form", body: Data("a=1+2&b=%2B".utf8))
        #expect(legacy.formItems.map(\.value) == ["1 2", "+"])
    }

    @Test("a handler's MockRequest offers the same reads, and every property of the URLRequest")
    func mockRequest() async throws {
        let seen = Locked<[String]>([])
        let api = MockTransport {
            MockRoute.put("/users/:id") { request in
                let body = try request.decodedBody(as: NewUser.self)
                seen.withLock {
                    $0 = [
                        request.parameters["id"]!, body.name, request.header("X-Trace") ?? "-",
                        request.queryValue("v") ?? "-", request.path, request.method.rawValue,
                        request.url?.host ?? "-", "\(request.callIndex)",
                    ]
                }
                return .noContent
            }
        }
        let client = Client(baseURL: testBase, transport: api)
        let _: EmptyResponse = try await client.send(
            .put("/users/7", json: NewUser(name: "Bo"), query: ["v": "2"], headers: ["X-Trace": "t"])
        )
        #expect(seen.value == ["7", "Bo", "t", "2", "/users/7", "PUT", "api.example.test", "0"])
    }

    @Test("a MockRequest made by hand reads its URLRequest")
    func handMadeMockRequest() throws {
        let made = MockRequest(
            request(.post, "/x?q=1", headers: ["A": "b"], body: Data(#"{"name":"Ada"}"#.utf8)),
            parameters: ["id": "9"],
            callIndex: 3
        )
        #expect(made.urlRequest.httpMethod == "POST")
        #expect(made.parameters == ["id": "9"])
        #expect(made.callIndex == 3)
        #expect(made.header("a") == "b")
        #expect(made.queryValue("q") == "1")
        #expect(try made.decodedBody(as: NewUser.self) == NewUser(name: "Ada"))
        #expect(made.bodyText == #"{"name":"Ada"}"#)
    }
}
