#if AsyncHTTPClient
import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `AsyncHTTPClientTransport.stream(_:)` against a real socket: what a streamed body promises, and how its
/// chunks are made from AsyncHTTPClient's buffers.
@Suite("AsyncHTTPClientTransport streaming", .timeLimit(.minutes(1)))
struct AsyncHTTPClientStreamingTests {
    /// A body that announces more than it sends, so the server stalls after `hello` until the client closes.
    static let stalling = SocketServer.Reply.stall(
        status: 200,
        headers: [.init(name: "Content-Length", value: "100000")],
        body: Data("hello".utf8)
    )

    /// Runs `body` against a server that answers every request with `reply`, with a transport that owns its
    /// client; shuts both down after, however `body` ends.
    static func withServer(
        _ reply: SocketServer.Reply,
        _ body: (SocketServer, AsyncHTTPClientTransport) async throws -> Void
    ) async throws {
        let server = try SocketServer { _ in reply }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        let result = await outcome { try await body(server, transport) }
        try await transport.shutdown()
        try result.get()
    }

    /// Reads the stalling body's `hello`, then starts the next read, which waits for bytes that never come.
    static func readPastHello(_ body: StreamedBody) async throws -> Task<Data?, any Error> {
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next() == Data("hello".utf8))
        return Task { [iterator] in
            var iterator = iterator
            return try await iterator.next()
        }
    }

    @Test("a streamed body arrives whole and in order, in more than one chunk")
    func wholeBody() async throws {
        let sent = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        try await Self.withServer(.response(status: 200, body: sent)) { server, transport in
            let (body, response) = try await transport.stream(URLRequest(url: server.url("/large")))
            var received = Data()
            var chunks = 0
            for try await chunk in body {
                received.append(chunk)
                chunks += 1
            }
            #expect(response.statusCode == 200)
            #expect(received == sent)
            #expect(chunks > 1)
        }
    }

    @Test("cancelling the body from another task ends a read in progress and closes the connection")
    func cancelledFromElsewhere() async throws {
        try await Self.withServer(Self.stalling) { server, transport in
            let (body, _) = try await transport.stream(URLRequest(url: server.url("/stall")))
            let reader = try await Self.readPastHello(body)
            body.cancel()
            await #expect(throws: CancellationError.self) { _ = try await reader.value }
            await server.closedByClient.wait(for: 1)
        }
    }

    @Test("an idle timeout ends a silent body, closes the connection and ends the call")
    func idleTimeout() async throws {
        try await Self.withServer(Self.stalling) { server, transport in
            let client = Client(transport: transport)
            let clock = ManualClock()
            let (body, _) = try await client.stream(
                URLRequest(url: server.url("/stall")),
                idleTimeout: .seconds(5),
                clock: clock
            )
            let reader = try await Self.readPastHello(body)
            #expect(client.lifecycle.inFlight == 1)
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(5))
            let error = await #expect(throws: CourierError.self) { _ = try await reader.value }
            #expect(error?.code == .timedOut)
            await server.closedByClient.wait(for: 1)
            try await waitUntil { client.lifecycle.inFlight == 0 }
        }
    }

    @Test("a shutdown's grace period stops a body still streaming and closes its connection")
    func shutdownStopsBody() async throws {
        try await Self.withServer(Self.stalling) { server, transport in
            let client = Client(configuration: .init(transport: transport, isCancellableOnShutdown: true))
            let clock = ManualClock()
            let (body, _) = try await client.stream(URLRequest(url: server.url("/stall")))
            let reader = try await Self.readPastHello(body)
            let shutdown = Task { await client.shutdown(gracePeriod: .seconds(5), clock: clock) }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(5))
            await shutdown.value
            let error = await #expect(throws: CourierError.self) { _ = try await reader.value }
            #expect(error?.code == .clientShutDown)
            await server.closedByClient.wait(for: 1)
            #expect(client.lifecycle.inFlight == 0)
        }
    }

    @Test("the call counts as in flight until its body is read to the end")
    func countsUntilBodyEnds() async throws {
        try await Self.withServer(.response(status: 200, body: Data("all of it".utf8))) { server, transport in
            let client = Client(transport: transport)
            let (body, _) = try await client.stream(URLRequest(url: server.url("/short")))
            #expect(client.lifecycle.inFlight == 1)
            #expect(try await body.collect(upTo: 100) == Data("all of it".utf8))
            #expect(client.lifecycle.inFlight == 0)
        }
    }

    @Test("a body dropped unread closes its connection")
    func droppedBody() async throws {
        try await Self.withServer(Self.stalling) { server, transport in
            let response = try await transport.stream(URLRequest(url: server.url("/stall"))).1
            #expect(response.statusCode == 200)
            await server.closedByClient.wait(for: 1)
        }
    }

    @Test("a connection lost mid-body is thrown by the body's loop as a transport error")
    func connectionLost() async throws {
        let cut = Data("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello".utf8)
        try await Self.withServer(.raw(cut)) { server, transport in
            let (body, _) = try await Client(transport: transport).stream(URLRequest(url: server.url("/cut")))
            let error = await #expect(throws: CourierError.self) {
                for try await _ in body {}
            }
            #expect(error?.code == .transport)
            #expect(error?.message == "the connection to 127.0.0.1:\(server.port) was lost during the response body")
            #expect(error?.underlying != nil)
        }
    }

    // MARK: Chunks

    @Test("a large chunk shares its buffer's memory, and keeps it alive after the buffer is gone")
    func largeChunkShares() {
        let bytes = (0..<(64 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var chunk = Data()
        do {
            let buffer = ByteBuffer(bytes: bytes)
            chunk = AsyncHTTPClientTransport.chunk(buffer)
            let shared = buffer.withUnsafeReadableBytes { bufferBytes in
                chunk.withUnsafeBytes { $0.baseAddress == bufferBytes.baseAddress }
            }
            #expect(shared)
        }
        #expect(chunk == Data(bytes))
    }

    @Test(
        "a small chunk, or a small part of a large buffer, is copied",
        arguments: [(100, 100), (16 * 1024 - 1, 16 * 1024 - 1), (20 * 1024, 128 * 1024)]
    )
    func smallChunkCopied(length: Int, storage: Int) throws {
        let whole = ByteBuffer(bytes: (0..<storage).map { UInt8(truncatingIfNeeded: $0) })
        let buffer = try #require(whole.getSlice(at: 0, length: length))
        let chunk = AsyncHTTPClientTransport.chunk(buffer)
        let shared = buffer.withUnsafeReadableBytes { bufferBytes in
            chunk.withUnsafeBytes { $0.baseAddress == bufferBytes.baseAddress }
        }
        #expect(!shared)
        #expect(chunk == Data(buffer.readableBytesView))
    }
}
#endif
