#if AsyncHTTPClient
import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("AsyncHTTPClientTransport against hostile and closing servers", .timeLimit(.minutes(1)))
struct AsyncHTTPClientHostileResponseTests {
    /// `HTTP/1.1 000 Zero` with a body of two bytes.
    private static let statusZero = Data("HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok".utf8)

    /// Sends a GET to `server` through `transport`, with `send` and with `stream`, and returns how each ended.
    private static func sendAndStream(
        _ transport: AsyncHTTPClientTransport,
        to server: SocketServer
    ) async -> [Result<Int, any Error>] {
        let sent = await outcome { try await transport.send(URLRequest(url: server.url("/send"))).1.statusCode }
        let streamed = await outcome {
            let (body, response) = try await transport.stream(URLRequest(url: server.url("/stream")))
            _ = try await body.collect(upTo: 1 << 20)
            return response.statusCode
        }
        return [sent, streamed]
    }

    @Test("a status below 100 with a body fails with nonHTTPResponse instead of stopping the process")
    func statusBelow100() async throws {
        let server = try SocketServer { _ in .raw(Self.statusZero) }
        defer { server.shutdown() }
        var custom = HTTPClient.Configuration()
        custom.decompression = .disabled
        let borrowed = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientTransport.defaultConfiguration
        )
        // An owned client, one with a configuration of the caller's, and a borrowed one made from the default.
        for transport in [
            AsyncHTTPClientTransport(), AsyncHTTPClientTransport(configuration: custom),
            AsyncHTTPClientTransport(client: borrowed),
        ] {
            let results = await Self.sendAndStream(transport, to: server)
            try await transport.shutdown()
            for result in results {
                let error = try #require(result.failure as? CourierError, "\(result)")
                #expect(error.code == .nonHTTPResponse)
                #expect(error.message.contains("has the status 0, which is not an HTTP status"), "\(error.message)")
            }
        }
        try await borrowed.shutdown()
    }

    @Test(
        "a plain HTTPClient stops the process on a status below 100 with a body (AsyncHTTPClient 1.37.0)",
        .disabled(
            """
            Stops the test process: AsyncHTTPClient skips a head below 200 as informational and a precondition of \
            its HTTPRequestStateMachine fails on the body that follows (see ResponseStatusGuard). Enable it on a \
            new AsyncHTTPClient: when it passes, the guard is no longer needed.
            """
        )
    )
    func plainClientStatusBelow100() async throws {
        let server = try SocketServer { _ in .raw(Self.statusZero) }
        defer { server.shutdown() }
        let plain = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)
        )
        let transport = AsyncHTTPClientTransport(client: plain)
        let results = await Self.sendAndStream(transport, to: server)
        try await plain.shutdown()
        for result in results {
            #expect(result.failure != nil, "\(result)")
        }
    }

    @Test("10,000 fields whose names share a length and first letter convert in one pass")
    func manyFieldsConvertLinearly() throws {
        // The old conversion compared each name with every earlier one of its length and first letter, finding
        // each by walking the fields from the start: about 10^12 / 6 steps here, far past the time limit.
        var fields = (0..<10_000).map { ("x\(String(format: "%05d", $0))", "v") }
        fields.append(("X00000", "w"))
        fields.append(("x09999", "w"))
        let converted = try AsyncHTTPClientTransport.headerFields(
            NIOHTTP1.HTTPHeaders(fields),
            for: nil,
            maximumFieldCount: 20_000
        )
        #expect(converted.count == 10_000)
        #expect(converted["x00000"] == "v, w")
        #expect(converted["x09999"] == "v, w")
        #expect(converted["x05000"] == "v")
    }

    @Test(
        "a name or value with CR, LF or NUL never reaches HTTPURLResponse, even when the client let it through",
        arguments: [("X-Token", "a\rSet-Cookie: evil=1"), ("X-Token", "a\u{0}b"), ("X-A\nB", "1")]
    )
    func controlCharactersRefused(name: String, value: String) throws {
        // NIOHTTP1.HTTPHeaders takes any string: what AsyncHTTPClient's parser would refuse is built directly.
        let error = try #require(throws: CourierError.self) {
            try AsyncHTTPClientTransport.headerFields(
                NIOHTTP1.HTTPHeaders([("Vary", "Accept"), (name, value)]),
                for: nil
            )
        }
        #expect(error.code == .nonHTTPResponse)
        #expect(error.message.contains("control character"))
    }

    @Test("more than 1,000 fields are refused with nonHTTPResponse before they are converted")
    func fieldLimit() throws {
        let atLimit = NIOHTTP1.HTTPHeaders((0..<1_000).map { ("x\($0)", "v") })
        #expect(try AsyncHTTPClientTransport.headerFields(atLimit, for: nil).count == 1_000)
        let over = NIOHTTP1.HTTPHeaders((0...1_000).map { ("x\($0)", "v") })
        let error = try #require(throws: CourierError.self) {
            try AsyncHTTPClientTransport.headerFields(over, for: nil)
        }
        #expect(error.code == .nonHTTPResponse)
        #expect(error.message == "the response has 1001 header fields, more than Courier accepts (1000)")
    }

    /// A server that answers `/first` and keeps the connection, then closes the connection on the first other
    /// request it reads without answering (as a server that closes an idle connection just as a request goes
    /// out), and answers every later one.
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

    @Test(
        "a GET on a pooled connection the server closed is sent once more, on a new connection",
        arguments: [false, true]
    )
    func idempotentRequestSentAgain(streamed: Bool) async throws {
        let server = try Self.closingServer()
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        let result = await outcome {
            _ = try await transport.send(URLRequest(url: server.url("/first")))
            let request = URLRequest(url: server.url("/second"))
            if streamed {
                let (body, _) = try await transport.stream(request)
                return try await body.collect(upTo: 1024)
            }
            return try await transport.send(request).0
        }
        try await transport.shutdown()
        #expect(String(decoding: try result.get(), as: UTF8.self) == "two")
        #expect(server.requests.map(\.path) == ["/first", "/second", "/second"])
    }

    @Test("a POST in the same situation is not sent again, unless it has an Idempotency-Key")
    func postNotSentAgain() async throws {
        for key in [nil, "k-1"] {
            let server = try Self.closingServer()
            defer { server.shutdown() }
            let transport = AsyncHTTPClientTransport()
            let result = await outcome {
                _ = try await transport.send(URLRequest(url: server.url("/first")))
                var request = URLRequest(url: server.url("/second"))
                request.httpMethod = "POST"
                request.httpBody = Data("charge".utf8)
                request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
                return try await transport.send(request).0
            }
            try await transport.shutdown()
            if key == nil {
                let error = try #require(result.failure as? CourierError, "\(result)")
                #expect(error.code == .transport)
                #expect(error.message.contains("was closed before the response arrived"), "\(error.message)")
                // Transient: a retry policy may send it again, and by its own rules it does so only for an
                // idempotent request or one with a key.
                #expect(RetryPolicy.isTransient(error))
                #expect(server.requests.map(\.path) == ["/first", "/second"])
            } else {
                #expect(String(decoding: try result.get(), as: UTF8.self) == "two")
                #expect(server.requests.map(\.path) == ["/first", "/second", "/second"])
                #expect(server.requests.last?.body == Data("charge".utf8))
            }
        }
    }

    @Test("the connection errors that mean a request got no answer, and who may send it again")
    func sendAgainRules() {
        for error: any Error in [
            ChannelError.ioOnClosedChannel, HTTPClientError.remoteConnectionClosed,
            IOError(errnoCode: ECONNRESET, reason: "write"), IOError(errnoCode: EPIPE, reason: "write"),
        ] {
            #expect(AsyncHTTPClientTransport.wasLostBeforeResponse(error), "\(error)")
        }
        for error: any Error in [
            IOError(errnoCode: ECONNREFUSED, reason: "connect"), HTTPClientError.connectTimeout, CancellationError(),
        ] {
            #expect(!AsyncHTTPClientTransport.wasLostBeforeResponse(error), "\(error)")
        }
        let url = URL(string: "http://127.0.0.1:1/x")!
        var request = URLRequest(url: url)
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            request.httpMethod = method
            #expect(AsyncHTTPClientTransport.maySendAgain(request), "\(method)")
        }
        for method in ["POST", "PATCH"] {
            request.httpMethod = method
            #expect(!AsyncHTTPClientTransport.maySendAgain(request), "\(method)")
        }
        request.setValue("k", forHTTPHeaderField: "Idempotency-Key")
        #expect(AsyncHTTPClientTransport.maySendAgain(request))
        // An empty or blank key is no key.
        for blank in ["", " \t"] {
            request.setValue(blank, forHTTPHeaderField: "Idempotency-Key")
            #expect(!AsyncHTTPClientTransport.maySendAgain(request), "\"\(blank)\"")
        }
        // A one-shot body stream cannot be sent again, whatever the method.
        var upload = URLRequest(url: url)
        upload.httpMethod = "PUT"
        upload.httpBodyStream = InputStream(data: Data("x".utf8))
        #expect(!AsyncHTTPClientTransport.maySendAgain(upload))
    }
}
#endif
