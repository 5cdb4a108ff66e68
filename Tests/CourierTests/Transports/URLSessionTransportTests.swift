import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("URLSessionTransport against a loopback server", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
    /// How a test builds the transport: with its own session (bodies limited while they arrive) or over a
    /// session of the caller's that refuses redirects (the session collects bodies with a completion
    /// handler).
    enum Variant: String, CaseIterable, CustomTestStringConvertible {
        case ownSession
        case callersSession

        var testDescription: String { rawValue }

        func make(maximumResponseSize: Int = URLSessionTransport.defaultMaximumResponseSize) -> URLSessionTransport {
            switch self {
            case .ownSession:
                URLSessionTransport(maximumResponseSize: maximumResponseSize)
            case .callersSession:
                URLSessionTransport(
                    session: URLSession(
                        configuration: URLSessionTransport.defaultConfiguration,
                        delegate: RefusingRedirects(),
                        delegateQueue: nil
                    ),
                    maximumResponseSize: maximumResponseSize
                )
            }
        }
    }

    @Test(
        "a redirect to another origin is returned, not followed, and the other origin sees nothing",
        arguments: Variant.allCases
    )
    func redirectIsReturned(variant: Variant) async throws {
        let other = try SocketServer { _ in .response(status: 200, body: Data("secret page".utf8)) }
        defer { other.shutdown() }
        let location = other.url("/landing").absoluteString
        let server = try SocketServer { _ in
            .response(
                status: 302,
                headers: [.init(name: "Location", value: location)],
                body: Data("moved".utf8)
            )
        }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/start"))
        request.setValue("Bearer s3cr3t-token", forHTTPHeaderField: "Authorization")
        request.setValue("session=abc", forHTTPHeaderField: "Cookie")
        let (_, response) = try await variant.make().send(request)
        #expect(response.statusCode == 302)
        #expect(response.value(forHTTPHeaderField: "Location") == location)
        #expect(server.requests.count == 1)
        #expect(other.requests.isEmpty)
    }

    @Test("the body of a 3xx comes back with it when the transport owns its session")
    func redirectBody() async throws {
        let server = try SocketServer { _ in
            .response(status: 307, headers: [.init(name: "Location", value: "/elsewhere")], body: Data("moved".utf8))
        }
        defer { server.shutdown() }
        let (data, response) = try await URLSessionTransport().send(URLRequest(url: server.url("/start")))
        #expect(response.statusCode == 307)
        #expect(String(decoding: data, as: UTF8.self) == "moved")
        #expect(server.requests.map(\.path) == ["/start"])
    }

    @Test("a body of exactly the maximum size is accepted", arguments: Variant.allCases)
    func bodyAtLimit(variant: Variant) async throws {
        let body = Data(repeating: 0x61, count: 64 * 1024)
        let server = try SocketServer { _ in .response(status: 200, body: body) }
        defer { server.shutdown() }
        let transport = variant.make(maximumResponseSize: body.count)
        let (data, response) = try await transport.send(URLRequest(url: server.url("/exact")))
        #expect(response.statusCode == 200)
        #expect(data == body)
    }

    @Test("one byte over the maximum size fails with bodyTooLarge", arguments: Variant.allCases)
    func bodyOverLimit(variant: Variant) async throws {
        let body = Data(repeating: 0x61, count: 64 * 1024 + 1)
        let server = try SocketServer { _ in .response(status: 200, body: body) }
        defer { server.shutdown() }
        let transport = variant.make(maximumResponseSize: 64 * 1024)
        let error = try await #require(throws: CourierError.self) {
            try await transport.send(URLRequest(url: server.url("/over")))
        }
        #expect(error.code == .bodyTooLarge)
        #expect(error.statusCode == 200)
        #expect(error.message.contains("65536"))
    }

    @Test("a Content-Length above the maximum fails at the headers and the connection is closed")
    func announcedLengthTooLarge() async throws {
        let server = try SocketServer { _ in
            // Announces 100 MB, sends 1 KiB, and waits: only a transport that reads the headers and gives
            // up can end this exchange.
            .stall(
                status: 200,
                headers: [.init(name: "Content-Length", value: "100000000")],
                body: Data(repeating: 0x61, count: 1024)
            )
        }
        defer { server.shutdown() }
        let transport = URLSessionTransport(maximumResponseSize: 64 * 1024)
        let error = try await #require(throws: CourierError.self) {
            try await transport.send(URLRequest(url: server.url("/huge")))
        }
        #expect(error.code == .bodyTooLarge)
        #expect(error.message.contains("Content-Length: 100000000"))
        await server.closedByClient.wait(for: 1)
    }

    enum Framing: String, CaseIterable, CustomTestStringConvertible {
        case untilClose
        case chunked

        var testDescription: String { rawValue }
    }

    @Test("a body without Content-Length is refused while it arrives, before it ends", arguments: Framing.allCases)
    func endlessBodyRefused(framing: Framing) async throws {
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
        let transport = URLSessionTransport(maximumResponseSize: 64 * 1024)
        let error = try await #require(throws: CourierError.self) {
            try await transport.send(URLRequest(url: server.url("/endless")))
        }
        #expect(error.code == .bodyTooLarge)
        await server.closedByClient.wait(for: 1)
    }

    @Test("a HEAD response announcing a large Content-Length is not refused")
    func headIsNotRefused() async throws {
        let server = try SocketServer { _ in
            .stall(
                status: 200,
                headers: [
                    .init(name: "Content-Length", value: "100000000"), .init(name: "Connection", value: "close"),
                ]
            )
        }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/file"))
        request.httpMethod = "HEAD"
        let (data, response) = try await URLSessionTransport(maximumResponseSize: 1024).send(request)
        #expect(response.statusCode == 200)
        #expect(data.isEmpty)
    }

    @Test(
        "cancelling the caller cancels the request: CancellationError, and the connection is closed",
        arguments: Variant.allCases
    )
    func cancellation(variant: Variant) async throws {
        let server = try SocketServer { _ in .hang }
        defer { server.shutdown() }
        let transport = variant.make()
        let call = Task { try await transport.send(URLRequest(url: server.url("/slow"))) }
        await server.arrivals.wait(for: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        await server.closedByClient.wait(for: 1)
    }

    @Test("a task cancelled before sending throws CancellationError", arguments: Variant.allCases)
    func cancelledBeforeSending(variant: Variant) async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let transport = variant.make()
        let gate = Gate()
        let call = Task {
            await gate.wait()
            return try await transport.send(URLRequest(url: server.url("/never")))
        }
        call.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await call.value }
    }

    @Test("the default session stores no cookies: a Set-Cookie is not sent back")
    func noCookieStorage() async throws {
        let server = try SocketServer { request in
            request.path == "/login"
                ? .response(status: 200, headers: [.init(name: "Set-Cookie", value: "session=abc; Path=/")])
                : .response(status: 200)
        }
        defer { server.shutdown() }
        let transport = URLSessionTransport()
        _ = try await transport.send(URLRequest(url: server.url("/login")))
        _ = try await transport.send(URLRequest(url: server.url("/me")))
        let requests = server.requests
        #expect(requests.map(\.path) == ["/login", "/me"])
        #expect(requests.last?.header("Cookie") == nil)
    }

    @Test("method, headers and body reach the server", arguments: Variant.allCases)
    func sendsRequest(variant: Variant) async throws {
        let server = try SocketServer { request in .response(status: 201, body: request.body) }
        defer { server.shutdown() }
        var request = URLRequest(url: server.url("/items?x=1"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"name":"courier"}"#.utf8)
        let (data, response) = try await variant.make().send(request)
        #expect(response.statusCode == 201)
        #expect(data == Data(#"{"name":"courier"}"#.utf8))
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.target == "/items?x=1")
        #expect(received.header("Content-Type") == "application/json")
    }

    #if canImport(FoundationNetworking)
    @Test("on Linux a sub-second timeoutInterval is raised to one second; others are left alone")
    func subsecondTimeout() throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        request.timeoutInterval = 0.5
        URLSessionTransport.raiseSubsecondTimeout(&request)
        #expect(request.timeoutInterval == 1)
        request.timeoutInterval = 2.5
        URLSessionTransport.raiseSubsecondTimeout(&request)
        #expect(request.timeoutInterval == 2.5)
    }
    #endif
}

/// A session delegate that refuses every redirect, as the documentation asks of a caller's session.
private final class RefusingRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
