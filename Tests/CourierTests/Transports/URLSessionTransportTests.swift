import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("URLSessionTransport against a loopback server", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
    @Test("a 200 comes back with its body and headers, and the server got the request as sent")
    func okWithBodyAndHeaders() async throws {
        let server = try LoopbackServer { _ in
            .response(
                status: 200,
                headers: [.init("Content-Type", "application/json"), .init("X-Served-By", "loopback")],
                body: Data(#"{"id":42}"#.utf8)
            )
        }
        defer { server.stop() }
        var request = URLRequest(url: server.url("/users/42?verbose=1"))
        request.httpMethod = "POST"
        request.setValue("abc", forHTTPHeaderField: "X-Trace")
        request.httpBody = Data("ping".utf8)

        let (data, response) = try await URLSessionTransport().send(request)

        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == #"{"id":42}"#)
        #expect(response.value(forHTTPHeaderField: "X-Served-By") == "loopback")
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.target == "/users/42?verbose=1")
        #expect(received.header("X-Trace") == "abc")
        #expect(received.body == Data("ping".utf8))
    }

    @Test("a typed request decodes through a Client over URLSessionTransport")
    func typedThroughClient() async throws {
        struct User: Decodable, Equatable { let id: Int }
        let server = try LoopbackServer { _ in .response(status: 200, body: Data(#"{"id":7}"#.utf8)) }
        defer { server.stop() }
        let client = Client(baseURL: server.url("/v1"), transport: URLSessionTransport())
        let user: User = try await client.send(.get("/users/7"))
        #expect(user == User(id: 7))
        #expect(server.requests.first?.target == "/v1/users/7")
    }

    @Test("a 500 is returned as a response, not thrown")
    func serverErrorIsReturned() async throws {
        let server = try LoopbackServer { _ in .response(status: 500, body: Data("boom".utf8)) }
        defer { server.stop() }
        let (data, response) = try await URLSessionTransport().send(URLRequest(url: server.url("/fail")))
        #expect(response.statusCode == 500)
        #expect(data == Data("boom".utf8))
    }

    @Test("cancelling the caller cancels the URLSessionTask: the server sees the connection close")
    func cancellationClosesTheConnection() async throws {
        let server = try LoopbackServer { _ in .hang }
        defer { server.stop() }
        let client = Client(transport: URLSessionTransport())
        let request = URLRequest(url: server.url("/slow"))
        let task = Task { try await client.send(request) }

        await server.requestArrivals.wait(for: 1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        // The session task was cancelled, so its connection closed; a leaked task would keep it open
        // and this wait would run into the time limit.
        await server.closedUnanswered.wait(for: 1)
        #expect(server.closedUnanswered.count == 1)
    }

    @Test("a task cancelled before sending throws CancellationError and sends nothing")
    func cancelledBeforeSending() async throws {
        let server = try LoopbackServer { _ in .response(status: 200) }
        defer { server.stop() }
        let transport = URLSessionTransport()
        let request = URLRequest(url: server.url("/never"))
        let gate = Gate()
        let task = Task {
            await gate.wait()
            return try await transport.send(request)
        }
        task.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requests.isEmpty)
    }

    @Test("a 302 is returned as it is by the default transport, and its target is never contacted")
    func redirectIsNotFollowed() async throws {
        let other = try LoopbackServer { _ in .response(status: 200, body: Data("elsewhere".utf8)) }
        defer { other.stop() }
        let server = try LoopbackServer { _ in
            .response(status: 302, headers: [.init("Location", other.url("/landing").absoluteString)])
        }
        defer { server.stop() }
        var request = URLRequest(url: server.url("/start"))
        request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")

        let (_, response) = try await URLSessionTransport().send(request)

        #expect(response.statusCode == 302)
        #expect(response.value(forHTTPHeaderField: "Location") == other.url("/landing").absoluteString)
        #expect(other.requests.isEmpty)
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
    }

    @Test("a reply that is not HTTP is a CourierError, not a hang or a crash")
    func notHTTP() async throws {
        let server = try LoopbackServer { _ in .raw(Data("SSH-2.0-OpenSSH_9.6\r\n\r\n".utf8)) }
        defer { server.stop() }
        let client = Client(transport: URLSessionTransport())
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: server.url("/")))
        }
        #expect(error?.code == .transport)
    }

    @Test("a connection closed without a reply is a transport error")
    func closedWithoutReply() async throws {
        let server = try LoopbackServer { _ in .raw(Data()) }
        defer { server.stop() }
        let client = Client(transport: URLSessionTransport())
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: server.url("/")))
        }
        #expect(error?.code == .transport)
    }

    @Test("a request with a bad header never reaches the server")
    func badHeaderRefused() async throws {
        let server = try LoopbackServer { _ in .response(status: 200) }
        defer { server.stop() }
        var badName = URLRequest(url: server.url("/x"))
        badName.setValue("1", forHTTPHeaderField: "X-Bad\r\nX-Injected")
        var badValue = URLRequest(url: server.url("/x"))
        badValue.allHTTPHeaderFields = ["X-Note": "a\r\nX-Injected: 1"]
        for request in [badName, badValue] {
            let error = await #expect(throws: CourierError.self) { try await URLSessionTransport().send(request) }
            #expect(error?.code == .invalidRequest)
        }
        #expect(server.requests.isEmpty)
    }

    @Test("a Set-Cookie is never stored: not sent back to its origin, to another port, or by another transport")
    func cookiesAreNeverStored() async throws {
        // A session's cookie jar matches cookies by host, not by port: with `.ephemeral`, a cookie set by
        // 127.0.0.1:A is sent to 127.0.0.1:B, another origin, which would undo the redirect middleware's
        // stripping of `Cookie` on a hop to another port. The default configuration stores no cookies.
        let server = try LoopbackServer { _ in
            .response(status: 200, headers: [.init("Set-Cookie", "sid=tenant-a-session; Path=/")])
        }
        defer { server.stop() }
        let otherPort = try LoopbackServer { _ in .response(status: 200) }
        defer { otherPort.stop() }
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

    @Test("a transport over a caller's session leaves that session usable after the transport is gone")
    func borrowedSessionStaysValid() async throws {
        let server = try LoopbackServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.stop() }
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
