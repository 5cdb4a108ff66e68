import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport whose streamed bodies the test writes into, and which records, at the moment it happens,
/// that the reader's side stopped one (what a real transport does then: cancel its task, close the connection).
private final class RecordingStreams: Transport {
    private let pipes = LockedState<[ChunkPipe]>([])
    private let stops = LockedState<[Int]>([])

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        Issue.record("a streamed call must use stream(_:)")
        throw CancellationError()
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let pipe = ChunkPipe()
        let index = pipes.withLock { pipes in
            pipes.append(pipe)
            return pipes.count - 1
        }
        pipe.onStop { [stops] in stops.withLock { $0.append(index) } }
        // swift-format-ignore: NeverForceUnwrap
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
        return (StreamedBody(pipe: pipe), response)
    }

    /// Writes `text` into the body of the `index`th stream.
    func write(_ text: String, to index: Int = 0) {
        _ = pipes.withLock { $0[index] }.yield(Data(text.utf8))
    }

    /// Whether the reader's side stopped the `index`th stream.
    func isStopped(_ index: Int = 0) -> Bool { stops.withLock { $0.contains(index) } }
}

/// When a streamed body stops its transport: as soon as the loop reading it is left, even while the body value
/// itself is still in scope.
@Suite("StreamedBody lifetime", .timeLimit(.minutes(1)))
struct StreamedBodyLifetimeTests {
    private let url = URL(string: "http://127.0.0.1/stream")!

    @Test("breaking out of the loop stops the transport before the next statement, though the body lives on")
    func breakStopsAtOnce() async throws {
        let transport = RecordingStreams()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url))
        transport.write("first")
        transport.write("second")
        for try await chunk in body {
            #expect(chunk == Data("first".utf8))
            break
        }
        #expect(transport.isStopped(), "the loop was left, but the transport still sends")
        #expect(client.lifecycle.inFlight == 0)
        // The body is used after the check, so it is alive during it.
        withExtendedLifetime(body) {}
    }

    @Test("throwing out of the loop of a parsed body (lines) stops the transport at once")
    func throwStopsAtOnce() async throws {
        struct Enough: Error {}
        let transport = RecordingStreams()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url))
        transport.write("one\ntwo\n")
        let lines = body.lines
        await #expect(throws: Enough.self) {
            for try await line in lines where line == "one" { throw Enough() }
        }
        #expect(transport.isStopped())
        withExtendedLifetime((body, lines)) {}
    }

    @Test("returning from a function that read part of the body stops it, though the caller keeps the body")
    func returnStopsAtOnce() async throws {
        let transport = RecordingStreams()
        let (body, _) = try await transport.stream(URLRequest(url: url))
        transport.write("header\n")
        func firstChunk(of body: StreamedBody) async throws -> Data? {
            for try await chunk in body { return chunk }
            return nil
        }
        #expect(try await firstChunk(of: body) == Data("header\n".utf8))
        #expect(transport.isStopped())
        withExtendedLifetime(body) {}
    }

    @Test("a copy of the iterator, read in another task, keeps the body going when the original is dropped")
    func iteratorCopiesShareTheirLifetime() async throws {
        let transport = RecordingStreams()
        let (body, _) = try await transport.stream(URLRequest(url: url))
        transport.write("a")
        let reader: Task<Data?, any Error>
        do {
            var iterator = body.makeAsyncIterator()
            #expect(try await iterator.next() == Data("a".utf8))
            reader = Task { [iterator] in
                var iterator = iterator
                return try await iterator.next()
            }
        }
        #expect(!transport.isStopped(), "the copy in the task still reads the body")
        transport.write("b")
        #expect(try await reader.join() == Data("b".utf8))
        withExtendedLifetime(body) {}
    }

    @Test("two iterators of one body split its chunks; the body stops when the last of them is dropped")
    func twoIterators() async throws {
        let transport = RecordingStreams()
        let (body, _) = try await transport.stream(URLRequest(url: url))
        var second = body.makeAsyncIterator()
        do {
            var first = body.makeAsyncIterator()
            transport.write("a")
            #expect(try await first.next() == Data("a".utf8))
        }
        #expect(!transport.isStopped(), "another iterator still reads the body")
        transport.write("b")
        #expect(try await second.next() == Data("b".utf8))
        _ = consume second
        #expect(transport.isStopped())
        withExtendedLifetime(body) {}
    }

    @Test("a body read to its end is not stopped (nothing to stop), and the loop's end changes nothing")
    func readToTheEnd() async throws {
        let pipe = ChunkPipe()
        let stopped = LockedState(false)
        pipe.onStop { stopped.withLock { $0 = true } }
        let body = StreamedBody(pipe: pipe)
        _ = pipe.yield(Data("all".utf8))
        pipe.finish(error: nil)
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        #expect(received == Data("all".utf8))
        #expect(!stopped.withLock { $0 })
        withExtendedLifetime(body) {}
    }

    @Test("a body never iterated is still stopped when dropped, and by cancel()")
    func neverIterated() async throws {
        let transport = RecordingStreams()
        do { _ = try await transport.stream(URLRequest(url: url)) }
        #expect(transport.isStopped(0))
        let (body, _) = try await transport.stream(URLRequest(url: url))
        let lines = body.lines  // a view, not a reader: it does not keep the body going by itself
        #expect(!transport.isStopped(1))
        body.cancel()
        #expect(transport.isStopped(1))
        withExtendedLifetime(lines) {}
    }

    @Test("leaving an event loop stops the connection at once, though the body of the call lives on")
    func serverSentEventsBreak() async throws {
        let transport = RecordingStreams()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url))
        transport.write("data: one\n\ndata: two\n\n")
        for try await event in body.serverSentEvents {
            #expect(event.data == "one")
            break
        }
        #expect(transport.isStopped())
        withExtendedLifetime(body) {}
    }
}

/// The same promise over real sockets: the server sees the connection close while the body is still in scope.
@Suite("StreamedBody lifetime against a loopback server", .timeLimit(.minutes(1)))
struct StreamedBodyLoopbackTests {
    /// The kinds that stream (a caller's session without Courier's delegate reads the whole body first).
    static let streamingKinds = TransportKind.allCases.filter { $0 != .urlSessionCallersSession }

    @Test("breaking out of the loop closes the connection, though the body lives on", arguments: streamingKinds)
    func breakClosesConnection(kind: TransportKind) async throws {
        // A body that announces more than it sends: the server stalls after `hello` until the client closes.
        let server = try SocketServer { _ in
            .stall(status: 200, headers: [.init(name: "Content-Length", value: "100000")], body: Data("hello".utf8))
        }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let client = Client(transport: transport)
            let (body, _) = try await client.stream(URLRequest(url: server.url("/stall")))
            for try await chunk in body {
                #expect(!chunk.isEmpty)
                break
            }
            // Before the fix, the connection stayed open as long as `body` did: this waited until the time limit.
            await server.closedByClient.wait(for: 1)
            #expect(client.lifecycle.inFlight == 0)
            withExtendedLifetime(body) {}
        }
    }
}
