#if AsyncHTTPClient
import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOHTTP1
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("AsyncHTTPClientTransport", .timeLimit(.minutes(1)))
struct AsyncHTTPClientTransportTests {
    @Test("an owned client never follows redirects, even when its configuration says so")
    func ownedClientDisallowsRedirects() async throws {
        let other = try SocketServer { _ in .response(status: 200) }
        defer { other.shutdown() }
        let location = other.url("/landing").absoluteString
        let server = try SocketServer { _ in .response(status: 301, headers: [.init(name: "Location", value: location)])
        }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport(
            configuration: HTTPClient.Configuration(redirectConfiguration: .follow(max: 5, allowCycles: false))
        )
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/start"))) }
        try await transport.shutdown()
        #expect(try result.get().1.statusCode == 301)
        #expect(other.requests.isEmpty)
    }

    @Test("a borrowed client is not shut down by the transport; the owner shuts it down")
    func borrowedClient() async throws {
        let server = try SocketServer { _ in .response(status: 204) }
        defer { server.shutdown() }
        let httpClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)
        )
        let transport = AsyncHTTPClientTransport(client: httpClient)
        #expect(!transport.ownsClient)
        try await transport.shutdown()
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/after"))) }
        try await httpClient.shutdown()
        #expect(try result.get().1.statusCode == 204)
    }

    @Test("after shutdown(), sending fails with clientShutDown")
    func shutDown() async throws {
        let transport = AsyncHTTPClientTransport()
        #expect(transport.ownsClient)
        try await transport.shutdown()
        let error = try await #require(throws: CourierError.self) {
            try await transport.send(URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
        }
        #expect(error.code == .clientShutDown)
    }

    @Test("a body stream is read and sent whole")
    func bodyStream() async throws {
        let server = try SocketServer { request in .response(status: 200, body: request.body) }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        request.httpBodyStream = InputStream(data: Data(repeating: 0x62, count: 100_000))
        let result = await outcome { try await transport.send(request) }
        try await transport.shutdown()
        #expect(try result.get().0 == Data(repeating: 0x62, count: 100_000))
        #expect(server.requests.first?.method == "PUT")
    }

    @Test("the request is converted field by field")
    func requestConversion() throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/a/b?c=d%20e")!)
        request.httpMethod = "PATCH"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        request.httpBody = Data("{}".utf8)
        let converted = try AsyncHTTPClientTransport.makeRequest(from: request)
        #expect(converted.url == "http://127.0.0.1:8080/a/b?c=d%20e")
        #expect(converted.method.rawValue == "PATCH")
        #expect(converted.headers.first(name: "content-type") == "application/json")
        #expect(converted.headers.first(name: "authorization") == "Bearer t")
        #expect(converted.body != nil)
    }

    @Test("repeated response headers are joined with commas; the status and URL are kept")
    func responseConversion() throws {
        let response = HTTPClientResponse(
            version: .http1_1,
            status: .accepted,
            headers: NIOHTTP1.HTTPHeaders([("Vary", "Accept"), ("Vary", "Origin"), ("Content-Type", "text/plain")])
        )
        let url = URL(string: "http://127.0.0.1/x")!
        let converted = AsyncHTTPClientTransport.makeResponse(response, for: URLRequest(url: url))
        #expect(converted.statusCode == 202)
        #expect(converted.url == url)
        #expect(converted.value(forHTTPHeaderField: "vary") == "Accept, Origin")
        #expect(converted.value(forHTTPHeaderField: "Content-Type") == "text/plain")
    }
}
#endif
