import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every layer that sends a request again gives a body Courier streams a fresh pass from its first byte.
@Suite("Streamed bodies sent again", .timeLimit(.minutes(1)))
struct UploadReplayTests {
    /// The layers that send a request again, and the replies that make them do so.
    typealias Resender = BodyReplayTests.Resender

    /// The kinds of streamed body, each with the bytes it must arrive as.
    enum Kind: String, CaseIterable, NamedByRawValue, Sendable {
        case file, stream, multipart, multipartWithStreamPart

        /// The file's contents in chunks of 40,000 bytes, in a new sequence.
        static func chunks(of file: TemporaryFile) -> AsyncStream<Data> {
            AsyncStream<Data> { continuation in
                var offset = 0
                while offset < file.contents.count {
                    continuation.yield(file.contents[offset..<min(offset + 40_000, file.contents.count)])
                    offset += 40_000
                }
                continuation.finish()
            }
        }

        func body(_ file: TemporaryFile) -> RequestBody {
            switch self {
            case .file:
                .file(file.url)
            case .stream:
                .stream(length: Int64(file.contents.count)) { Self.chunks(of: file) }
            case .multipart:
                .multipart(MultipartForm([.text("a", "1"), .file("f", at: file.url)], boundary: "b"))
            case .multipartWithStreamPart:
                .multipart(
                    MultipartForm(
                        [.text("a", "1"), .stream("f", filename: "upload.bin") { Self.chunks(of: file) }],
                        boundary: "b"
                    )
                )
            }
        }

        func expected(_ file: TemporaryFile) -> Data {
            switch self {
            case .file, .stream:
                return file.contents
            case .multipart, .multipartWithStreamPart:
                var data = Data("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n".utf8)
                data.append(
                    contentsOf:
                        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"upload.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                        .utf8
                )
                data.append(file.contents)
                data.append(contentsOf: "\r\n--b--\r\n".utf8)
                return data
            }
        }
    }

    /// A mock that reads every request's whole body and records it with the stream instance it came in.
    final class BodyRecorder: Sendable {
        let bodies = Locked<[Data]>([])
        let streams = Locked<[ObjectIdentifier]>([])
        let transport: MockTransport

        init(first: MockResponse) {
            let bodies = bodies
            let streams = streams
            let replies = Locked([first])
            transport = MockTransport(
                .handler { request in
                    let body = try await request.readBody()
                    bodies.withLock { $0.append(body) }
                    if let stream = request.urlRequest.httpBodyStream {
                        streams.withLock { $0.append(ObjectIdentifier(stream)) }
                    }
                    return replies.withLock { $0.isEmpty ? .ok : $0.removeFirst() }
                }
            )
        }
    }

    @Test(
        "each re-send reads the whole body again, from a stream of its own",
        arguments: Resender.allCases,
        Kind.allCases
    )
    func replayed(_ resender: Resender, _ kind: Kind) async throws {
        let file = try TemporaryFile(size: 200_000)
        defer { file.remove() }
        let recorder = BodyRecorder(first: resender.first)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        _ = try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: kind.body(file)))
        #expect(recorder.bodies.value == [kind.expected(file), kind.expected(file)])
        let streams = recorder.streams.value
        try #require(streams.count == 2)
        #expect(streams[0] != streams[1])
    }

    @Test(
        "a hedged attempt reads the whole body from a stream of its own, while the first is still sending",
        arguments: Kind.allCases
    )
    func hedged(_ kind: Kind) async throws {
        let file = try TemporaryFile(size: 200_000)
        defer { file.remove() }
        let bodies = Locked<[Data]>([])
        let streams = Locked<Set<ObjectIdentifier>>([])
        let transport = MockTransport(
            .handler { request in
                let body = try await request.readBody()
                let call = bodies.withLock {
                    $0.append(body)
                    return $0.count
                }
                streams.withLock { _ = $0.insert(ObjectIdentifier(request.urlRequest.httpBodyStream!)) }
                if call == 1 { try await waitForCancellation() }
                return .ok
            }
        )
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.hedging(after: .zero, maxExtraAttempts: 1)]
        )
        _ = try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: kind.body(file)))
        #expect(bodies.value == [kind.expected(file), kind.expected(file)])
        #expect(streams.value.count == 2)
    }

    @Test("a raw one-shot httpBodyStream is still refused with bodyNotReplayable", arguments: Resender.allCases)
    func rawStreamRefused(_ resender: Resender) async throws {
        let recorder = BodyRecorder(first: resender.first)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        var request = URLRequest(url: exampleBaseURL.appendingPathComponent("upload"))
        request.httpMethod = "PUT"
        request.httpBodyStream = InputStream(data: Data("once".utf8))
        let error = try await #require(throws: CourierError.self) { try await client.send(request) }
        #expect(error.code == .bodyNotReplayable)
        #expect(recorder.bodies.value == [Data("once".utf8)])
    }

    @Test("Replay gives a streamed body a fresh stream over the same source, and leaves other requests as they are")
    func freshStream() throws {
        let file = try TemporaryFile(size: 10)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        let again = Replay.fresh(request)
        #expect(again.httpBodyStream !== request.httpBodyStream)
        #expect(again.httpBodyStream is UploadBodyStream)
        #expect(Replay.isReplayable(request))
        #expect(try readAsInputStream(again) == file.contents)
        var plain = URLRequest(url: exampleBaseURL)
        plain.httpBody = Data("x".utf8)
        #expect(Replay.fresh(plain) == plain)
    }

    @Test("the stream survives URLRequest copies and changes to other fields")
    func survivesCopies() throws {
        let file = try TemporaryFile(size: 10)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        var copy = request
        copy.setValue("x", forHTTPHeaderField: "X-A")
        copy.url = URL(string: "https://other.example.test/y")
        copy.httpMethod = "POST"
        #expect(copy.httpBodyStream === request.httpBodyStream)
        #expect(Replay.isReplayable(copy))
    }
}
