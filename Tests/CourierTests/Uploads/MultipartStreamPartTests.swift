import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Multipart parts whose bytes come from an asynchronous sequence: made afresh for every send, or one-shot.
@Suite("Multipart stream parts", .timeLimit(.minutes(1)))
struct MultipartStreamPartTests {
    /// The head of a part named `name` with `filename` and `type`, after the boundary `b`.
    private static func head(
        _ name: String,
        filename: String? = nil,
        type: String? = "application/octet-stream"
    )
        -> String
    {
        var head = "--b\r\nContent-Disposition: form-data; name=\"\(name)\""
        if let filename { head += "; filename=\"\(filename)\"" }
        head += "\r\n"
        if let type { head += "Content-Type: \(type)\r\n" }
        return head + "\r\n"
    }

    /// A one-shot sequence of `chunks` that counts how many times it is iterated.
    private final class OneShot: Sendable {
        let chunks: [Data]
        let iterations: Locked<Int>
        let stream: AsyncStream<Data>

        init(_ chunks: [Data]) {
            self.chunks = chunks
            let iterations = Locked(0)
            self.iterations = iterations
            // An AsyncStream can be read once: a second reading would find it finished, and send nothing.
            stream = AsyncStream { continuation in
                iterations.withLock { $0 += 1 }
                for chunk in chunks { continuation.yield(chunk) }
                continuation.finish()
            }
        }

        var joined: Data { chunks.reduce(Data(), +) }
    }

    /// Reads `request`'s body through its source's asynchronous chunks, as AsyncHTTPClientTransport does.
    private static func readAsChunks(_ request: URLRequest) async throws -> Data {
        let stream = try #require(request.httpBodyStream as? UploadBodyStream)
        var data = Data()
        for try await chunk in stream.source.chunks { data.append(chunk) }
        return data
    }

    @Test("a stream part is laid out between the others like a file part, with its filename and type")
    func layout() async throws {
        let file = try TemporaryFile(size: 300_000)
        defer { file.remove() }
        let factory = ChunkFactory([Data("alpha,".utf8), Data(), Data("beta".utf8)])
        let oneShot = OneShot([Data("one ".utf8), Data("shot".utf8)])
        let form = MultipartForm(
            [
                .text("title", "Q3"),
                .stream("rows", filename: "rows.csv", contentType: "text/csv") { factory.make() },
                .file("f", at: file.url),
                .stream("raw", once: oneShot.stream, contentType: nil),
            ],
            boundary: "b"
        )
        var expected = Data((Self.head("title", type: nil) + "Q3\r\n").utf8)
        expected.append(contentsOf: (Self.head("rows", filename: "rows.csv", type: "text/csv") + "alpha,beta\r\n").utf8)
        expected.append(contentsOf: Self.head("f", filename: "upload.bin").utf8)
        expected.append(file.contents)
        expected.append(contentsOf: ("\r\n" + Self.head("raw", type: nil) + "one shot\r\n--b--\r\n").utf8)
        let request = try uploadRequest(.multipart(form), method: .post)
        #expect(try readAsInputStream(request) == expected)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/form-data; boundary=b")
    }

    @Test("a form whose stream parts all have a length has a known length; one without makes it unknown")
    func length() throws {
        let file = try TemporaryFile(size: 1000)
        defer { file.remove() }
        let sized = MultipartForm(
            [.file("f", at: file.url), .stream("s", length: 8) { ChunkFactory([Data(count: 8)]).make() }],
            boundary: "b"
        )
        let request = try uploadRequest(.multipart(sized), method: .post)
        #expect(uploadLength(of: request) == Int64(try readAsInputStream(request).count))
        let unsized = MultipartForm(
            [.file("f", at: file.url), .stream("s") { ChunkFactory([Data(count: 8)]).make() }],
            boundary: "b"
        )
        #expect(uploadLength(of: try uploadRequest(.multipart(unsized), method: .post)) == nil)
    }

    @Test(
        "a stream part that ends before or runs past its declared length fails the send, even when the total is right",
        arguments: [(declared: 10, produced: 6), (declared: 6, produced: 10)]
    )
    func lengthHeldPerPart(declared: Int, produced: Int) async throws {
        // The two parts' lengths add up to what they declare together: only a check per part sees the lie.
        let form = MultipartForm(
            [
                .stream("a", length: Int64(declared)) { ChunkFactory([Data(count: produced)]).make() },
                .stream("b", length: Int64(produced)) { ChunkFactory([Data(count: declared)]).make() },
            ],
            boundary: "b"
        )
        let request = try uploadRequest(.multipart(form), method: .post)
        let error = try await #require(throws: (any Error).self) { _ = try await Self.readAsChunks(request) }
        #expect("\(error)".contains("the multipart part \"a\""))
        #expect("\(error)".contains("\(declared) bytes it declared"))
        let streamError = try #require(throws: (any Error).self) { _ = try readAsInputStream(request) }
        #expect("\(streamError)" == "\(error)")
    }

    @Test("every reading of the form calls the factory again, when it reaches the part")
    func factoryPerReading() async throws {
        let factory = ChunkFactory([Data("x".utf8)])
        let form = MultipartForm([.text("a", "1"), .stream("s") { factory.make() }], boundary: "b")
        let request = try uploadRequest(.multipart(form), method: .post)
        let stream = try #require(request.httpBodyStream as? UploadBodyStream)
        var iterator = stream.source.chunks.makeAsyncIterator()
        // The first chunk is the first part's head: the stream part has not been reached.
        #expect(try await iterator.next() == Data(Self.head("a", type: nil).utf8))
        #expect(factory.calls.value == 0)
        let first = try await Self.readAsChunks(request)
        let second = try readAsInputStream(request)
        #expect(first == second)
        #expect(factory.calls.value == 2)
    }

    @Test("a one-shot part is read once: a second reading of the form fails before its first byte")
    func oneShotSecondReading() async throws {
        let oneShot = OneShot([Data("payload".utf8)])
        let form = MultipartForm([.text("a", "1"), .stream("upload", once: oneShot.stream)], boundary: "b")
        let request = try uploadRequest(.multipart(form), method: .post)
        let first = try await Self.readAsChunks(request)
        #expect(String(decoding: first, as: UTF8.self).contains("payload"))

        // Through the source, as AsyncHTTPClientTransport reads it.
        let stream = try #require(request.httpBodyStream as? UploadBodyStream)
        var iterator = stream.source.chunks.makeAsyncIterator()
        let error = try await #require(throws: (any Error).self) { _ = try await iterator.next() }
        #expect("\(error)".contains("\"upload\" is a one-shot stream"))
        #expect("\(error)".contains("sent only once"))
        // As an InputStream, as URLSession reads it: not one byte before the error.
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 1024)
        #expect(stream.read(&buffer, maxLength: buffer.count) == -1)
        #expect("\(stream.streamError.map { "\($0)" } ?? "")".contains("one-shot stream"))
        // A request built again from the same form shares the part: it fails the same way.
        let again = try uploadRequest(.multipart(form), method: .post)
        #expect(throws: (any Error).self) { _ = try readAsInputStream(again) }
        #expect(oneShot.iterations.value == 1)
    }

    @Test("a form with a one-shot part is not replayable; one whose stream parts are factories is")
    func replayability() throws {
        let oneShot = OneShot([Data("x".utf8)])
        let once = try uploadRequest(.multipart(MultipartForm([.stream("s", once: oneShot.stream)])), method: .post)
        #expect(!Replay.isReplayable(once))
        let factory = ChunkFactory([Data("x".utf8)])
        let made = try uploadRequest(.multipart(MultipartForm([.stream("s") { factory.make() }])), method: .post)
        #expect(Replay.isReplayable(made))
    }

    typealias BodyRecorder = UploadReplayTests.BodyRecorder

    @Test(
        "a layer that would send a one-shot part again throws bodyNotReplayable naming the part; it was sent once, whole",
        arguments: BodyReplayTests.Resender.allCases
    )
    func oneShotRefused(_ resender: BodyReplayTests.Resender) async throws {
        let oneShot = OneShot([Data("first ".utf8), Data("and only".utf8)])
        let form = MultipartForm([.text("a", "1"), .stream("upload", once: oneShot.stream)], boundary: "b")
        let recorder = BodyRecorder(first: resender.first)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        let error = try await #require(throws: CourierError.self) {
            try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: .multipart(form)))
        }
        #expect(error.code == .bodyNotReplayable)
        #expect(error.message.contains("multipart part \"upload\" is a one-shot stream"))
        let expected = Self.head("a", type: nil) + "1\r\n" + Self.head("upload") + "first and only\r\n--b--\r\n"
        #expect(recorder.bodies.value == [Data(expected.utf8)])
        #expect(oneShot.iterations.value == 1)
    }

    @Test("a form with a one-shot part is not hedged: it is sent once")
    func oneShotNotHedged() async throws {
        let oneShot = OneShot([Data("x".utf8)])
        let recorder = BodyRecorder(first: .ok)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: recorder.transport,
            middleware: [.hedging(after: .zero, maxExtraAttempts: 2)]
        )
        let form = MultipartForm([.stream("s", once: oneShot.stream)], boundary: "b")
        _ = try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: .multipart(form)))
        #expect(recorder.bodies.value.count == 1)
        #expect(oneShot.iterations.value == 1)
    }

    /// A transport that reads the body the way `mode` reads it until some bytes of the stream part have come
    /// (past the part's head), then waits for more, until it is cancelled.
    private struct PartReader: Transport {
        let mode: UploadCancellationTests.PartialReader.Mode
        let started: Arrivals

        func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let stream = try #require(request.httpBodyStream as? UploadBodyStream)
            var received = 0
            switch mode {
            case .inputStream:
                stream.open()
                var buffer = [UInt8](repeating: 0, count: 1000)
                while received <= 200 {
                    let count = stream.read(&buffer, maxLength: buffer.count)
                    try #require(count > 0)
                    received += count
                }
                started.arrive()
                // URLSession's reader would block in `read` here; the pump that feeds it waits on the sequence.
                try await waitForCancellation()
            case .chunks:
                var iterator = stream.source.chunks.makeAsyncIterator()
                while received <= 200 {
                    received += try #require(try await iterator.next()).count
                }
                started.arrive()
                // A transport that streams the body waits on the sequence for the next chunk.
                _ = try await iterator.next()
            }
            throw CancellationError()
        }
    }

    @Test(
        "a stream part's sequence is ended when its send is cancelled mid-upload",
        arguments: [UploadCancellationTests.PartialReader.Mode.inputStream, .chunks],
        [false, true]
    )
    func cancelled(_ mode: UploadCancellationTests.PartialReader.Mode, oneShot: Bool) async throws {
        let started = Arrivals()
        let terminated = Arrivals()
        let endless: @Sendable () -> AsyncStream<Data> = {
            AsyncStream<Data> { continuation in
                continuation.onTermination = { _ in terminated.arrive() }
                continuation.yield(Data(count: 5000))
                // Never finishes: only cancellation ends it.
            }
        }
        let part: MultipartForm.Part = oneShot ? .stream("s", once: endless()) : .stream("s") { endless() }
        let client = Client(baseURL: exampleBaseURL, transport: PartReader(mode: mode, started: started))
        let task = Task {
            try await client.send(
                Request<Data>(method: .put, target: .path("/upload"), body: .multipart(MultipartForm([part])))
            )
        }
        await started.wait(for: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        await terminated.wait(for: 1)
        #expect(terminated.count == 1)
    }
}
