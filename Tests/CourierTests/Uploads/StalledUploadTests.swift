import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An upload whose stream stops producing. URLSession on Linux reads a body stream on the one work queue every
/// session of the process shares, so a read that waits for the next chunk holds up every URLSession transfer;
/// the call's end (a timeout, a cancelled caller) must let go of it, and must never end the body early, which
/// would send a truncated body as a whole one.
@Suite("An upload whose stream stalls", .timeLimit(.minutes(1)))
struct StalledUploadTests {
    /// A first chunk, then nothing until `gate` opens; cancellation does not end the wait, as it would not in a
    /// sequence that ignores it.
    struct StallingChunks: AsyncSequence, Sendable {
        let gate: Gate
        /// Arrived at when the second chunk is asked for.
        let asked: Arrivals

        struct AsyncIterator: AsyncIteratorProtocol {
            let gate: Gate
            let asked: Arrivals
            var sent = false

            mutating func next() async -> Data? {
                if !sent {
                    sent = true
                    return Data(repeating: UInt8(ascii: "a"), count: 1000)
                }
                asked.arrive()
                await gate.wait()
                return nil
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(gate: gate, asked: asked) }
    }

    @Test(
        "a streamed upload that stalls is cut at its timeout, its body never sent whole, and other sessions' transfers go on",
        arguments: [TransportKind.urlSession, .urlSessionCallersSession]
    )
    func stalledUploadCut(kind: TransportKind) async throws {
        let gate = Gate()
        defer { gate.open() }
        let asked = Arrivals()
        let server = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.shutdown() }
        let result = try await kind.withTransport { transport in
            let client = Client(baseURL: server.url(), transport: transport, middleware: [.timeout(.milliseconds(300))])
            return await outcome {
                try await client.send(
                    Request<Data>(
                        method: .post,
                        target: .path("/upload"),
                        body: .stream { StallingChunks(gate: gate, asked: asked) }
                    )
                )
            }
        }
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .timedOut)
        // A transfer of another session while the stream is still stalled: it waited for the shared work queue
        // until the stream produced again (here, the test's time limit) before uploads were aborted.
        #expect(!gate.isOpen)
        let (body, response) = try await URLSessionTransport().send(URLRequest(url: server.url("/after")))
        #expect(response.statusCode == 200)
        #expect(body == Data("ok".utf8))
        // The upload's connection was closed before its last chunk: the server saw no POST, only the GET.
        #expect(server.requests.map(\.path) == ["/after"])
    }

    @Test("a read waiting for a stream's next chunk fails when the upload is aborted, as does every read after it")
    func abortEndsWaitingRead() async throws {
        let gate = Gate()
        defer { gate.open() }
        let asked = Arrivals()
        let stream = UploadBodyStream(
            UploadSource(length: nil) { ChunkIterator(StallingChunks(gate: gate, asked: asked)) }
        )
        stream.open()
        var first = [UInt8](repeating: 0, count: 4096)
        #expect(stream.read(&first, maxLength: first.count) == 1000)
        // The read blocks its thread: on a thread of its own, not the cooperative pool's. A stream is read by one
        // thread at a time, and aborted from any (its state is behind a lock).
        nonisolated(unsafe) let reader = stream
        let read = Arrivals()
        let count = Locked<Int?>(nil)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let result = reader.read(&buffer, maxLength: buffer.count)
            count.withLock { $0 = result }
            read.arrive()
        }
        await asked.wait(for: 1)
        stream.abort()
        await read.wait(for: 1)
        // Whether the read was waiting already or comes after the abort, it fails: it does not end the body.
        #expect(count.withLock { $0 } == -1)
        #expect(stream.streamStatus == .error)
        #expect(stream.streamError is CancellationError)
        // A reader that asks before it reads (FoundationNetworking does) reads, and gets the error.
        #expect(stream.hasBytesAvailable)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(stream.read(&buffer, maxLength: buffer.count) == -1)
        // Opened again, it stays aborted: a re-send reads a fresh stream.
        stream.open()
        #expect(stream.read(&buffer, maxLength: buffer.count) == -1)
        stream.close()
    }

    @Test("a stream aborted before its reader opens it fails the reading, never sends a body")
    func abortBeforeOpen() {
        let stream = UploadBodyStream(UploadSource(length: nil) { ChunkIterator(AsyncStream<Data> { $0.finish() }) })
        stream.abort()
        stream.open()
        #expect(stream.hasBytesAvailable)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(stream.read(&buffer, maxLength: buffer.count) == -1)
        #expect(stream.streamError is CancellationError)
        // Another send's stream reads the whole (empty) body.
        let fresh = stream.fresh()
        fresh.open()
        #expect(fresh.read(&buffer, maxLength: buffer.count) == 0)
    }

    @Test("aborting an upload reaches the stream a session was given to send it again, before or after that")
    func abortReachesTheRenewal() {
        let source = UploadSource(length: 4) { ChunkIterator(AsyncStream<Data> { $0.yield(Data("body".utf8)) }) }
        var buffer = [UInt8](repeating: 0, count: 16)
        // Renewed (libcurl sends the request again), then the exchange ends: the stream the session reads now fails.
        let original = UploadBodyStream(source)
        let renewal = original.renewed()
        renewal.open()
        original.abort()
        #expect(renewal.read(&buffer, maxLength: buffer.count) == -1)
        #expect(renewal.streamError is CancellationError)
        // The exchange ended first: a renewal asked for afterwards fails at once.
        let ended = UploadBodyStream(source)
        ended.abort()
        let late = ended.renewed()
        late.open()
        #expect(late.read(&buffer, maxLength: buffer.count) == -1)
    }
}
