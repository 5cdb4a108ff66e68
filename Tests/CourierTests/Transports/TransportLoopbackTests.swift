import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Transports against a loopback server", .timeLimit(.minutes(1)))
struct TransportLoopbackTests {
    /// A request for `url` with a bearer token and a cookie: credentials a hop to another origin must not carry.
    private static func credentialed(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        request.setValue("Bearer s3cr3t-token", forHTTPHeaderField: "Authorization")
        request.setValue("session=abc", forHTTPHeaderField: "Cookie")
        return request
    }

    @Test(
        "a redirect to another origin is returned, not followed, and the other origin sees nothing",
        arguments: TransportKind.allCases
    )
    func redirectIsReturned(kind: TransportKind) async throws {
        let other = try SocketServer { _ in .response(status: 200, body: Data("secret page".utf8)) }
        defer { other.shutdown() }
        let location = other.url("/landing").absoluteString
        let server = try SocketServer { _ in
            .response(status: 302, headers: [.init(name: "Location", value: location)], body: Data("moved".utf8))
        }
        defer { server.shutdown() }
        let request = Self.credentialed(server.url("/start"))

        let (_, response) = try await kind.withTransport { try await $0.send(request) }

        #expect(response.statusCode == 302)
        #expect(response.value(forHTTPHeaderField: "Location") == location)
        #expect(server.requests.count == 1)
        #expect(other.requests.isEmpty)
    }

    @Test("the body of a 3xx comes back with it", arguments: TransportKind.deliveringRedirectBodies)
    func redirectBody(kind: TransportKind) async throws {
        let server = try SocketServer { _ in
            .response(status: 307, headers: [.init(name: "Location", value: "/elsewhere")], body: Data("moved".utf8))
        }
        defer { server.shutdown() }
        let (data, response) = try await kind.withTransport { try await $0.send(URLRequest(url: server.url("/start"))) }
        #expect(response.statusCode == 307)
        #expect(String(decoding: data, as: UTF8.self) == "moved")
        #expect(server.requests.map(\.path) == ["/start"])
    }

    @Test("a body of exactly the maximum size is accepted", arguments: TransportKind.allCases)
    func bodyAtLimit(kind: TransportKind) async throws {
        let body = Data(repeating: 0x61, count: 64 * 1024)
        let server = try SocketServer { _ in .response(status: 200, body: body) }
        defer { server.shutdown() }
        let (data, response) = try await kind.withTransport(maximumResponseSize: body.count) {
            try await $0.send(URLRequest(url: server.url("/exact")))
        }
        #expect(response.statusCode == 200)
        #expect(data == body)
    }

    @Test("one byte over the maximum size fails with bodyTooLarge", arguments: TransportKind.allCases)
    func bodyOverLimit(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200, body: Data(repeating: 0x61, count: 64 * 1024 + 1)) }
        defer { server.shutdown() }
        try await kind.withTransport(maximumResponseSize: 64 * 1024) { transport in
            let error = try await #require(throws: CourierError.self) {
                try await transport.send(URLRequest(url: server.url("/over")))
            }
            #expect(error.code == .bodyTooLarge)
            #expect(error.statusCode == 200)
            #expect(error.message.contains("65536"))
        }
    }

    @Test(
        "a Content-Length above the maximum fails at the headers and the connection is closed",
        arguments: TransportKind.limitingWhileReceiving
    )
    func announcedLengthTooLarge(kind: TransportKind) async throws {
        // Announces 100 MB, sends 1 KiB, and waits: only a transport that reads the headers and gives up can
        // end this exchange.
        let server = try SocketServer { _ in
            .stall(
                status: 200,
                headers: [.init(name: "Content-Length", value: "100000000")],
                body: Data(repeating: 0x61, count: 1024)
            )
        }
        defer { server.shutdown() }
        try await kind.withTransport(maximumResponseSize: 64 * 1024) { transport in
            let error = try await #require(throws: CourierError.self) {
                try await transport.send(URLRequest(url: server.url("/huge")))
            }
            #expect(error.code == .bodyTooLarge)
            #expect(error.message.contains("Content-Length: 100000000"))
            await server.closedByClient.wait(for: 1)
        }
    }

    enum Framing: String, CaseIterable, NamedByRawValue {
        case untilClose
        case chunked
    }

    @Test(
        "a body without Content-Length is refused while it arrives, before it ends",
        arguments: TransportKind.limitingWhileReceiving,
        Framing.allCases
    )
    func endlessBodyRefused(kind: TransportKind, framing: Framing) async throws {
        let part = Data(repeating: 0x61, count: 256 * 1024)
        let headers: [SocketServer.Header]
        let body: Data
        switch framing {
        case .untilClose:
            headers = []
            body = part
        case .chunked:
            headers = [.init(name: "Transfer-Encoding", value: "chunked")]
            body = Data((String(part.count, radix: 16) + "\r\n").utf8) + part + Data("\r\n".utf8)
        }
        // The server sends 256 KiB and never ends the body: a transport that buffers the whole body before
        // checking its size would wait forever.
        let server = try SocketServer { _ in .stall(status: 200, headers: headers, body: body) }
        defer { server.shutdown() }
        try await kind.withTransport(maximumResponseSize: 64 * 1024) { transport in
            let error = try await #require(throws: CourierError.self) {
                try await transport.send(URLRequest(url: server.url("/endless")))
            }
            #expect(error.code == .bodyTooLarge)
            await server.closedByClient.wait(for: 1)
        }
    }

    @Test("a HEAD response announcing a large Content-Length is not refused", arguments: TransportKind.allCases)
    func headIsNotRefused(kind: TransportKind) async throws {
        let server = try SocketServer { _ in
            .stall(
                status: 200,
                headers: [.init(name: "Content-Length", value: "100000000"), .init(name: "Connection", value: "close")]
            )
        }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/file"))
        request.httpMethod = "HEAD"
        let (data, response) = try await kind.withTransport(maximumResponseSize: 1024) { try await $0.send(request) }
        #expect(response.statusCode == 200)
        #expect(data.isEmpty)
    }

    @Test(
        "cancelling the caller cancels the request: CancellationError, and the connection is closed",
        arguments: TransportKind.allCases
    )
    func cancellation(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .hang }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let call = Task { try await transport.send(URLRequest(url: server.url("/slow"))) }
            await server.arrivals.wait(for: 1)
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.join() }
            await server.closedByClient.wait(for: 1)
        }
    }

    @Test("a task cancelled before sending throws CancellationError", arguments: TransportKind.allCases)
    func cancelledBeforeSending(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let gate = Gate()
            let call = Task {
                await gate.wait()
                return try await transport.send(URLRequest(url: server.url("/never")))
            }
            call.cancel()
            gate.open()
            await #expect(throws: CancellationError.self) { try await call.join() }
        }
    }

    @Test(
        "method, target, headers and body reach the server, and the response comes back",
        arguments: TransportKind.allCases
    )
    func sendsRequest(kind: TransportKind) async throws {
        let server = try SocketServer { request in
            .response(status: 201, headers: [.init(name: "X-Echo", value: request.method)], body: request.body)
        }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/items?x=1&y=%20"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("42", forHTTPHeaderField: "X-Request-ID")
        request.httpBody = Data(#"{"name":"courier"}"#.utf8)

        let (data, response) = try await kind.withTransport { try await $0.send(request) }

        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "x-echo") == "POST")
        #expect(response.url == request.url)
        #expect(data == Data(#"{"name":"courier"}"#.utf8))
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.target == "/items?x=1&y=%20")
        #expect(received.header("Content-Type") == "application/json")
        #expect(received.header("X-Request-ID") == "42")
        #expect(received.body == Data(#"{"name":"courier"}"#.utf8))
    }

    @Test(
        "a header name or value with CR or LF is refused before anything is sent",
        arguments: TransportKind.allCases
    )
    func invalidHeaderRefused(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        var badValue = URLRequest(url: server.url("/x"))
        // `setValue` drops such a value on Linux; assigning the fields directly keeps it.
        badValue.allHTTPHeaderFields = ["X-Note": "a\r\nX-Injected: 1"]
        var badName = URLRequest(url: server.url("/x"))
        badName.setValue("1", forHTTPHeaderField: "X-Bad\r\nX-Injected")
        try await kind.withTransport { transport in
            for request in [badValue, badName] {
                let error = try await #require(throws: CourierError.self) { try await transport.send(request) }
                #expect(error.code == .invalidRequest)
            }
        }
        #expect(server.requests.isEmpty)
    }

    @Test(
        "a method that could split the request line is refused before anything is sent",
        arguments: TransportKind.allCases
    )
    func invalidMethodRefused(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/x"))
        // Written as it is into the request line, this would make the server read a second request.
        request.httpMethod = "GET /smuggled HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET"
        try await kind.withTransport { transport in
            let error = try await #require(throws: CourierError.self) { try await transport.send(request) }
            #expect(error.code == .invalidRequest)
        }
        #expect(server.requests.isEmpty)
    }

    @Test(
        "with followingRedirects, a cross-origin hop over real sockets carries no Authorization or Cookie",
        arguments: TransportKind.allCases
    )
    func redirectsStripCredentialsEndToEnd(kind: TransportKind) async throws {
        let other = try SocketServer { _ in .response(status: 200, body: Data("other".utf8)) }
        defer { other.shutdown() }
        let landing = other.url("/landing").absoluteString
        let server = try SocketServer { request in
            switch request.path {
            case "/start": .response(status: 307, headers: [.init(name: "Location", value: "/same")])
            case "/same": .response(status: 302, headers: [.init(name: "Location", value: landing)])
            default: .response(status: 404)
            }
        }
        defer { server.shutdown() }
        var request = Self.credentialed(server.url("/start"))
        request.setValue("trace-1", forHTTPHeaderField: "X-Request-ID")

        let (data, response) = try await kind.withTransport { transport in
            try await Client(transport: transport, middleware: [.followingRedirects()]).send(request)
        }

        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "other")
        #expect(server.requests.map(\.path) == ["/start", "/same"])
        #expect(server.requests.allSatisfy { $0.header("Authorization") == "Bearer s3cr3t-token" })
        #expect(server.requests.allSatisfy { $0.header("Cookie") == "session=abc" })
        let hop = try #require(other.requests.first)
        #expect(other.requests.count == 1)
        #expect(hop.header("Authorization") == nil)
        #expect(hop.header("Cookie") == nil)
        #expect(hop.header("X-Request-ID") == "trace-1")
    }
}
