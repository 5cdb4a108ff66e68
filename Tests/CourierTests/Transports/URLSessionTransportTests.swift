import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What only `URLSessionTransport` does; what every transport does is in `TransportLoopbackTests`.
@Suite("URLSessionTransport against a loopback server", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
    @Test("a typed request decodes through a Client over URLSessionTransport")
    func typedThroughClient() async throws {
        struct User: Decodable, Equatable { let id: Int }
        let server = try SocketServer { _ in .response(status: 200, body: Data(#"{"id":7}"#.utf8)) }
        defer { server.shutdown() }
        let client = Client(baseURL: server.url("/v1"), transport: URLSessionTransport())
        let user: User = try await client.send(.get("/users/7"))
        #expect(user == User(id: 7))
        #expect(server.requests.first?.target == "/v1/users/7")
    }

    @Test("a 500 is returned as a response, not thrown")
    func serverErrorIsReturned() async throws {
        let server = try SocketServer { _ in .response(status: 500, body: Data("boom".utf8)) }
        defer { server.shutdown() }
        let (data, response) = try await URLSessionTransport().send(URLRequest(url: server.url("/fail")))
        #expect(response.statusCode == 500)
        #expect(data == Data("boom".utf8))
    }

    @Test("a task cancelled before sending throws CancellationError and sends nothing")
    func cancelledBeforeSending() async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let transport = URLSessionTransport()
        let request = URLRequest(url: server.url("/never"))
        let gate = Gate()
        let task = Task {
            await gate.wait()
            return try await transport.send(request)
        }
        task.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(server.requests.isEmpty)
    }

    @Test("connection refused is a CourierError with code transport and the URLError underneath")
    func connectionRefused() async throws {
        let port = try RefusingPort()
        let client = Client(transport: URLSessionTransport())
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: port.url("/nobody-home")))
        }
        #expect(error?.code == .transport)
        #expect(error?.middleware == nil)
        #expect(error?.underlying is URLError)
        #expect(error?.message == "cannot connect to 127.0.0.1:\(port.port)")
        #expect(error?.description.contains("cannot connect to 127.0.0.1:\(port.port)") == true)
    }

    @Test(
        "a URLError naming a connection failure says what happened, with the URLError underneath",
        arguments: [
            (URLError.Code.cannotConnectToHost, "cannot connect to api.example.test:443"),
            (.networkConnectionLost, "the connection to api.example.test:443 was lost"),
            (.timedOut, "no answer from api.example.test:443 within the request's timeout interval"),
            (.cannotFindHost, "cannot find host api.example.test"),
            (.dnsLookupFailed, "cannot find host api.example.test"),
        ]
    )
    func connectionFailureMessages(code: URLError.Code, message: String) throws {
        let request = URLRequest(url: URL(string: "https://api.example.test/v1/users")!)
        let error = try #require(TransportFailure.describing(URLError(code), request: request) as? CourierError)
        #expect(error.code == .transport)
        #expect(error.message == message)
        #expect((error.underlying as? URLError)?.code == code)
    }

    @Test("other URLErrors, cancellation among them, are passed on as they are")
    func otherURLErrorsPassedOn() {
        let request = URLRequest(url: URL(string: "http://[::1]:8080/x")!)
        for code in [URLError.Code.cancelled, .badServerResponse, .secureConnectionFailed] {
            #expect((TransportFailure.describing(URLError(code), request: request) as? URLError)?.code == code)
        }
        #expect(TransportFailure.endpoint(of: request) == "[::1]:8080")
        #expect(
            TransportFailure.endpoint(of: URLRequest(url: URL(string: "http://example.test/")!)) == "example.test:80"
        )
    }

    /// What a server that does not speak HTTP sends back.
    enum BrokenReply: String, CaseIterable, NamedByRawValue, Sendable {
        /// A reply that is not HTTP (an SSH banner).
        case notHTTP
        /// A connection closed without a reply.
        case closedWithoutReply

        var bytes: Data {
            switch self {
            case .notHTTP: Data("SSH-2.0-OpenSSH_9.6\r\n\r\n".utf8)
            case .closedWithoutReply: Data()
            }
        }
    }

    @Test(
        "a reply that is not HTTP, or a connection closed without a reply, is a transport error, not a hang or a crash",
        arguments: BrokenReply.allCases
    )
    func brokenReply(reply: BrokenReply) async throws {
        let server = try SocketServer { _ in .raw(reply.bytes) }
        defer { server.shutdown() }
        let client = Client(transport: URLSessionTransport())
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: server.url("/")))
        }
        #expect(error?.code == .transport)
    }

    @Test("a Set-Cookie is never stored: not sent back to its origin, to another port, or by another transport")
    func cookiesAreNeverStored() async throws {
        // A session's cookie jar matches cookies by host, not by port: with `.ephemeral`, a cookie set by
        // 127.0.0.1:A is sent to 127.0.0.1:B, another origin, which would undo the redirect middleware's
        // stripping of `Cookie` on a hop to another port. The default configuration stores no cookies.
        let server = try SocketServer { _ in
            .response(status: 200, headers: [.init(name: "Set-Cookie", value: "sid=tenant-a-session; Path=/")])
        }
        defer { server.shutdown() }
        let otherPort = try SocketServer { _ in .response(status: 200) }
        defer { otherPort.shutdown() }
        let tenantA = URLSessionTransport()
        let tenantB = URLSessionTransport()
        _ = try await tenantA.send(URLRequest(url: server.url("/login")))
        _ = try await tenantA.send(URLRequest(url: server.url("/again")))
        _ = try await tenantA.send(URLRequest(url: otherPort.url("/elsewhere")))
        _ = try await tenantB.send(URLRequest(url: server.url("/other")))
        #expect(server.requests.map { $0.header("Cookie") } == [nil, nil, nil])
        #expect(otherPort.requests.map { $0.header("Cookie") } == [nil])
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

    @Test(
        "a timeoutInterval that is infinite, not a number or beyond a 64-bit count of milliseconds is sent, no trap",
        arguments: [Double.infinity, -.infinity, .nan, 1e16, .greatestFiniteMagnitude, -1e300]
    )
    func unboundedTimeoutInterval(interval: Double) async throws {
        // On the request, and on the configuration of the transport's own session or of a caller's session.
        let configuration = URLSessionTransport.defaultConfiguration
        configuration.timeoutIntervalForRequest = interval
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let configured = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { configured.shutdown() }
        let own = URLSessionTransport(configuration: configuration)
        #expect(try await own.send(URLRequest(url: configured.url("/configured"))).1.statusCode == 200)
        #expect(try await own.stream(URLRequest(url: configured.url("/configured"))).1.statusCode == 200)
        // A caller's session: FoundationNetworking converts its interval for every request, so on Linux each one
        // fails clearly instead.
        let borrowed = URLSessionTransport(session: session)
        for stream in [false, true] {
            let request = URLRequest(url: configured.url("/borrowed"))
            let outcome = await outcome {
                stream
                    ? try await borrowed.stream(request).1.statusCode : try await borrowed.send(request).1.statusCode
            }
            #if canImport(FoundationNetworking)
            #expect((outcome.failure as? CourierError)?.code == .invalidRequest, "\(outcome)")
            #else
            #expect((try? outcome.get()) == 200)
            #endif
        }
        let server = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.shutdown() }
        let transport = URLSessionTransport()
        for stream in [false, true] {
            var request = URLRequest(url: server.url("/unbounded"))
            request.timeoutInterval = interval
            let status =
                stream
                ? try await transport.stream(request).1.statusCode : try await transport.send(request).1.statusCode
            #expect(status == 200)
        }
    }

    @Test("a transport over a caller's session leaves that session usable after the transport is gone")
    func borrowedSessionStaysValid() async throws {
        let server = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.shutdown() }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        weak var released: URLSessionTransport?
        do {
            let transport = URLSessionTransport(session: session)
            released = transport
            _ = try await transport.send(URLRequest(url: server.url("/first")))
        }
        #expect(released == nil)
        // The transport above is released; the session belongs to the caller and must still work.
        let (data, response) = try await session.data(for: URLRequest(url: server.url("/second")))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(data == Data("ok".utf8))
    }
}
