import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request written into a kept-alive connection that the server reads and then closes without answering (as a
/// server does that acted on the request and died, or closed an idle connection just as the request went out):
/// the transport cannot know whether the server acted on it, so a `POST` without an idempotency key is never
/// sent a second time, over any transport.
///
/// Measured (FoundationNetworking on Linux, 2026-11-26): libcurl sends a `GET` again by itself on a new
/// connection, but a `POST` it does not: the exchange stalls until the request's `timeoutInterval` (60 s by
/// default) and fails with `timedOut`. The test gives the request 2 s.
@Suite("A connection lost before the response, over every transport", .timeLimit(.minutes(1)))
struct LostConnectionResendTests {
    /// Answers `/first` and keeps the connection; reads the first other request and closes without answering;
    /// answers every later one.
    private static func closingServer() throws -> SocketServer {
        let closed = Locked(false)
        return try SocketServer { request in
            if request.path == "/first" { return .keepAlive(status: 200, body: Data("one".utf8)) }
            let first = closed.withLock { closed in
                defer { closed = true }
                return !closed
            }
            return first ? .close : .response(status: 200, body: Data("two".utf8))
        }
    }

    @Test("a POST without an Idempotency-Key reaches the server once", arguments: TransportKind.allCases)
    func postSentOnce(kind: TransportKind) async throws {
        let server = try Self.closingServer()
        defer { server.shutdown() }
        let result = try await kind.withTransport { transport in
            await outcome {
                _ = try await transport.send(URLRequest(url: server.url("/first")))
                var request = URLRequest(url: server.url("/charge"))
                request.httpMethod = "POST"
                request.httpBody = Data("charge".utf8)
                request.timeoutInterval = 2
                return try await transport.send(request).1.statusCode
            }
        }
        #expect(server.requests.map(\.path) == ["/first", "/charge"], "\(result)")
        #expect((try? result.get()) == nil, "\(result)")
    }
}
