import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Streamed bodies over the real transports, against a socket server that reads what arrives.
@Suite("Uploads over the real transports", .timeLimit(.minutes(1)))
struct UploadTransportTests {
    private func upload(
        _ body: RequestBody,
        over kind: TransportKind,
        middleware: [Middleware] = [],
        replies: [SocketServer.Reply] = []
    ) async throws -> [SocketServer.Request] {
        let queue = Locked(replies)
        let server = try SocketServer { _ in queue.withLock { $0.isEmpty ? .response(status: 200) : $0.removeFirst() } }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let client = Client(baseURL: server.url(), transport: transport, middleware: middleware)
            _ = try await client.send(Request<Data>(method: .post, target: .path("/upload"), body: body))
        }
        return server.requests
    }

    @Test("a file arrives byte for byte", arguments: TransportKind.allCases)
    func file(_ kind: TransportKind) async throws {
        let file = try TemporaryFile(size: 1_500_000)
        defer { file.remove() }
        let received = try await upload(.file(file.url, contentType: "application/x-test"), over: kind)
        let request = try #require(received.first)
        #expect(request.body == file.contents)
        #expect(request.header("Content-Type") == "application/x-test")
        if kind == .asyncHTTPClientIfBuilt {
            #expect(request.header("Content-Length") == "1500000")
            #expect(request.header("Transfer-Encoding") == nil)
        } else {
            // FoundationNetworking cannot give a body stream a length: it sends it chunked.
            #expect(request.header("Transfer-Encoding") == "chunked")
            #expect(request.header("Content-Length") == nil)
        }
    }

    @Test("a stream without a length arrives chunked", arguments: TransportKind.allCases)
    func stream(_ kind: TransportKind) async throws {
        let factory = ChunkFactory((0..<20).map { Data(repeating: UInt8($0), count: 10_000) })
        let received = try await upload(.stream { factory.make() }, over: kind)
        let request = try #require(received.first)
        #expect(request.body == factory.joined)
        #expect(request.header("Transfer-Encoding") == "chunked")
    }

    @Test(
        "a stream with a length arrives whole, with that Content-Length over AsyncHTTPClient",
        arguments: TransportKind.allCases
    )
    func streamWithLength(_ kind: TransportKind) async throws {
        let factory = ChunkFactory((0..<5).map { Data(repeating: UInt8($0), count: 30_000) })
        let received = try await upload(.stream(length: 150_000) { factory.make() }, over: kind)
        let request = try #require(received.first)
        #expect(request.body == factory.joined)
        if kind == .asyncHTTPClientIfBuilt {
            #expect(request.header("Content-Length") == "150000")
        } else {
            #expect(request.header("Transfer-Encoding") == "chunked")
        }
    }

    @Test("a stream that ends before its declared length fails the send", arguments: TransportKind.allCases)
    func streamEndsEarly(_ kind: TransportKind) async throws {
        let factory = ChunkFactory([Data(count: 1000)])
        await #expect(throws: (any Error).self) {
            _ = try await upload(.stream(length: 5000) { factory.make() }, over: kind)
        }
    }

    @Test("a multipart form retried after a 503 arrives whole both times", arguments: TransportKind.allCases)
    func multipartRetried(_ kind: TransportKind) async throws {
        let file = try TemporaryFile(size: 600_000)
        defer { file.remove() }
        let form = MultipartForm([.text("title", "été"), .file("f", at: file.url)])
        let received = try await upload(
            .multipart(form),
            over: kind,
            middleware: [
                .retry(RetryPolicy(maximumAttempts: 2, backoff: .immediate, retriesNonIdempotentRequests: true))
            ],
            replies: [.response(status: 503)]
        )
        try #require(received.count == 2)
        #expect(received[0].body == received[1].body)
        let body = try #require(received.last?.body)
        #expect(body.count > 600_000)
        #expect(received.last?.header("Content-Type") == form.contentType)
    }
}

extension TransportKind {
    /// `.asyncHTTPClient` when the package is built with the trait, else a kind no test runs with.
    static var asyncHTTPClientIfBuilt: TransportKind? {
        #if AsyncHTTPClient
        .asyncHTTPClient
        #else
        nil
        #endif
    }
}
