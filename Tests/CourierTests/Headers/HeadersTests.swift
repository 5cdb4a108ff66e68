import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("headers and jsonHeaders")
struct HeadersTests {
    /// Sends a request for `testURL` that has the header fields `fields` through `middleware`; returns what
    /// reached the transport.
    private func sentRequest(through middleware: Middleware, fields: [String: String]) async throws -> URLRequest {
        let transport = MockTransport.ok
        var request = URLRequest(url: testURL)
        for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
        _ = try await makeClient(transport, [middleware]).send(request)
        return try #require(transport.requests.first)
    }

    @Test("headers are added, and a header the request already has is replaced")
    func addsAndReplaces() async throws {
        let sent = try await sentRequest(
            through: .headers(["User-Agent": "courier/1.0", "accept": "application/json"]),
            fields: ["Accept": "text/plain", "X-Other": "kept"]
        )
        #expect(sent.value(forHTTPHeaderField: "User-Agent") == "courier/1.0")
        #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(sent.value(forHTTPHeaderField: "X-Other") == "kept")
    }

    @Test("repeated names in the list are all sent")
    func repeatedNames() async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Accept-Language", value: "en")
        headers.add(name: "Accept-Language", value: "fr")
        let sent = try await sentRequest(through: .headers(headers), fields: ["Accept-Language": "de"])
        let value = try #require(sent.value(forHTTPHeaderField: "Accept-Language"))
        let values = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(values == ["en", "fr"])
    }

    @Test("an empty list leaves the request as it is")
    func emptyList() async throws {
        let sent = try await sentRequest(through: .headers([:]), fields: ["X-One": "1"])
        #expect(sent.allHTTPHeaderFields == ["X-One": "1"])
    }

    @Test(
        "a bad header is rejected before anything is sent, without echoing its value",
        arguments: [
            ("X-Evil", "ok\r\nX-Injected: private-value"),
            ("X-Evil", "ok\nprivate-value"),
            ("X-Evil", "ok\rprivate-value"),
            ("X-Evil", "ok\u{0}private-value"),
            ("Bad Name", "private-value"),
            ("", "private-value"),
            ("X-Colon:", "private-value"),
        ]
    )
    func rejectsBadHeaders(name: String, value: String) async throws {
        let transport = MockTransport.ok
        let reached = Locked(0)
        let client = makeClient(transport, [.headers([name: value]), reachedMarker(reached)])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .invalidRequest)
        #expect(error.middleware == "headers")
        #expect(transport.callCount == 0)
        #expect(reached.value == 0)
        #expect(!error.description.contains("private-value"))
        #expect(!error.debugDescription.contains("private-value"))
    }

    /// Sends `request` through `.jsonHeaders`; returns the Accept and the Content-Type that reached the transport.
    private func acceptAndContentType(afterJSONHeaders request: URLRequest) async throws -> [String?] {
        let transport = MockTransport.ok
        _ = try await makeClient(transport, [.jsonHeaders]).send(request)
        let sent = try #require(transport.requests.first)
        return [sent.value(forHTTPHeaderField: "Accept"), sent.value(forHTTPHeaderField: "Content-Type")]
    }

    private func post(_ body: String) -> URLRequest {
        var request = URLRequest(url: testURL)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        return request
    }

    @Test("jsonHeaders sets Accept on a request without a body, and no Content-Type")
    func jsonHeadersWithoutBody() async throws {
        #expect(
            try await acceptAndContentType(afterJSONHeaders: URLRequest(url: testURL)) == ["application/json", nil]
        )
    }

    @Test("jsonHeaders sets Accept and Content-Type on a request with a body")
    func jsonHeadersWithBody() async throws {
        let sent = try await acceptAndContentType(afterJSONHeaders: post(#"{"name":"Ada"}"#))
        #expect(sent == ["application/json", "application/json"])
    }

    @Test("jsonHeaders keeps an Accept and a Content-Type the request already has")
    func jsonHeadersKeepsExisting() async throws {
        var request = post("a=1")
        request.setValue("application/problem+json", forHTTPHeaderField: "Accept")
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let sent = try await acceptAndContentType(afterJSONHeaders: request)
        #expect(sent == ["application/problem+json", "application/x-www-form-urlencoded"])
    }

    @Test("jsonHeaders adds no Content-Type for an empty body")
    func jsonHeadersEmptyBody() async throws {
        #expect(try await acceptAndContentType(afterJSONHeaders: post("")) == ["application/json", nil])
    }

    @Test("the built-in header middleware have stable names")
    func names() {
        #expect(Middleware.headers(["A": "b"]).name == "headers")
        #expect(Middleware.jsonHeaders.name == "jsonHeaders")
    }
    @Test("a credential field goes only to the base URL's origin; the other fields go everywhere")
    func credentialsStayWithTheirOrigin() async throws {
        let transport = MockTransport.ok
        let client = makeClient(
            transport,
            [.headers(["X-API-Key": "key-3f9a", "Authorization": "Bearer t-77", "User-Agent": "courier/1.0"])]
        )
        for url in [
            "https://api.example.test/v1/me", "https://cdn.example.net/report.csv", "http://api.example.test/v1/me",
            "https://api.example.test:8443/v1/me",
        ] {
            _ = try await client.send(URLRequest(url: URL(string: url)!))
        }
        let sent = transport.requests
        #expect(sent.count == 4)
        #expect(sent.first?.value(forHTTPHeaderField: "X-API-Key") == "key-3f9a")
        #expect(sent.first?.value(forHTTPHeaderField: "Authorization") == "Bearer t-77")
        for request in sent {
            #expect(request.value(forHTTPHeaderField: "User-Agent") == "courier/1.0")
        }
        for request in sent.dropFirst() {
            #expect(request.value(forHTTPHeaderField: "X-API-Key") == nil, "\(request.url!)")
            #expect(request.value(forHTTPHeaderField: "Authorization") == nil, "\(request.url!)")
        }
    }

    @Test("without a base URL, a credential field fails every request unless its origins are named")
    func credentialsWithoutBaseURL() async throws {
        let transport = MockTransport.ok
        let url = URL(string: "https://api.example.test/v1/me")!
        let unnamed = Client(transport: transport, middleware: [.headers(["X-API-Key": "key-3f9a"])])
        let error = await #expect(throws: CourierError.self) { try await unnamed.send(URLRequest(url: url)) }
        #expect(error?.code == .invalidRequest)
        #expect(error.map { !"\($0)".contains("key-3f9a") } == true)
        #expect(transport.callCount == 0)

        let named = Client(
            transport: transport,
            middleware: [.headers(["X-API-Key": "key-3f9a"], origins: .only(URL(string: "https://api.example.test")!))]
        )
        _ = try await named.send(URLRequest(url: url))
        _ = try await named.send(URLRequest(url: URL(string: "https://cdn.example.net/f")!))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-API-Key") } == ["key-3f9a", nil])
        // Plain fields need no origin.
        let plain = Client(transport: transport, middleware: [.headers(["User-Agent": "courier/1.0"])])
        _ = try await plain.send(URLRequest(url: url))
        #expect(transport.callCount == 3)
    }
}
