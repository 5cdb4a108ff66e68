import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("URLSessionTransport against a loopback server", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
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
