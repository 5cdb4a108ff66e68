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
/// Measured (FoundationNetworking on Linux, 2026-11-26 and 2026-12-07): libcurl sends the request again by itself
/// on a new connection, whatever its method, after asking for its body from the first byte. A body of bytes: the
/// copy's head goes out and its body never does, so the server never has the whole request, and the exchange
/// stalls until the request's `timeoutInterval` (60 s by default) and fails with `timedOut` (the test gives it
/// 2 s). A body stream: the transport hands libcurl a fresh stream when the request may be sent again, and one
/// that fails otherwise (before, libcurl read on from the consumed stream and sent the copy with an empty body).
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

    /// Sends `/first`, then `method` `/charge` with a file body (a stream Courier makes, chunked on Linux).
    private static func sendFileBody(
        _ method: String,
        over kind: TransportKind,
        to server: SocketServer,
        key: String? = nil
    ) async throws -> Result<Int, any Error> {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-resend-\(UUID().uuidString)")
        try Data("charge-by-stream".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await kind.withTransport { transport in
            await outcome {
                _ = try await transport.send(URLRequest(url: server.url("/first")))
                let built: Request<Data> =
                    method == "PUT" ? .put("/charge", body: .file(file)) : .post("/charge", body: .file(file))
                var request = try built.urlRequest(baseURL: server.url("/"))
                if let key { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
                request.timeoutInterval = 2
                return try await transport.send(request).1.statusCode
            }
        }
    }

    @Test(
        "a POST with a streamed body reaches the server once, and no copy of it goes out empty or cut",
        arguments: TransportKind.allCases
    )
    func streamedPostSentOnce(kind: TransportKind) async throws {
        let server = try Self.closingServer()
        defer { server.shutdown() }
        let result = try await Self.sendFileBody("POST", over: kind, to: server)
        #expect(server.requests.map(\.path) == ["/first", "/charge"], "\(result)")
        #expect(server.requests.filter { $0.path == "/charge" }.allSatisfy { $0.body == Data("charge-by-stream".utf8) })
        #expect((try? result.get()) == nil, "\(result)")
    }

    @Test(
        "a PUT, or a POST with an Idempotency-Key, with a streamed body is sent again whole, never empty",
        arguments: TransportKind.allCases
    )
    func streamedIdempotentSentWhole(kind: TransportKind) async throws {
        for (method, key) in [("PUT", nil), ("POST", "order-7")] as [(String, String?)] {
            let server = try Self.closingServer()
            defer { server.shutdown() }
            let result = try await Self.sendFileBody(method, over: kind, to: server, key: key)
            // Sent again by the transport itself, whole: the server read the first copy, closed, and answered the
            // second.
            let charges = server.requests.filter { $0.path == "/charge" }
            #expect(charges.count == 2, "\(method): \(result)")
            for request in charges {
                #expect(request.body == Data("charge-by-stream".utf8), "\(method): \(request.body.count) bytes")
            }
            #expect((try? result.get()) == 200, "\(method): \(result)")
        }
    }
}
