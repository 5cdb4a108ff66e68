import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("File and stream bodies", .timeLimit(.minutes(1)))
struct UploadBodyTests {
    @Test("a file body is the file's bytes, sent as a stream with the file's length and content type")
    func fileBody() async throws {
        let file = try TemporaryFile(size: 300_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url, contentType: "video/mp4"))
        #expect(request.httpBody == nil)
        #expect(uploadLength(of: request) == 300_000)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "video/mp4")
        #expect(try readAsInputStream(request) == file.contents)
        #expect(try await MockRequest(request).readBody() == file.contents)
    }

    @Test("a file is read in chunks of at most 128 KiB, and closed once read")
    func fileReadInChunks() async throws {
        let file = try TemporaryFile(size: 1_000_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        let source = try #require((request.httpBodyStream as? UploadBodyStream)?.source)
        var sizes: [Int] = []
        var received = Data()
        var iterator = source.chunks.makeAsyncIterator()
        while let chunk = try await iterator.next() {
            sizes.append(chunk.count)
            received.append(chunk)
            if received.count < file.contents.count { #expect(file.isOpen) }
        }
        #expect(received == file.contents)
        #expect(sizes.allSatisfy { $0 <= 128 * 1024 })
        #expect(sizes.count == 8)
        #expect(!file.isOpen)
    }

    @Test("every open() of the stream starts from the first byte, so a middleware that reads it leaves a whole body")
    func reopenStartsOver() throws {
        let file = try TemporaryFile(size: 70_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        #expect(try readAsInputStream(request) == file.contents)
        #expect(try readAsInputStream(request, maxLength: 999) == file.contents)
    }

    @Test("a missing file fails with encodingFailed naming it, and nothing is sent")
    func missingFile() async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let url = URL(fileURLWithPath: "/nonexistent/courier-missing.bin")
        let error = try await #require(throws: CourierError.self) {
            _ = try await client.send(Request<Data>(method: .put, target: .path("/f"), body: .file(url)))
        }
        #expect(error.code == .encodingFailed)
        #expect(error.message.contains("courier-missing.bin"))
        #expect(transport.requests.isEmpty)
    }

    @Test("a file that shrinks after the request was built fails the read instead of sending a short body")
    func fileShrinks() async throws {
        let file = try TemporaryFile(size: 50_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        try Data(count: 10).write(to: file.url)
        #expect(throws: (any Error).self) { try readAsInputStream(request) }
        await #expect(throws: (any Error).self) { try await MockRequest(request).readBody() }
    }

    @Test("bytes appended to a file after the request was built are not sent")
    func fileGrows() async throws {
        let file = try TemporaryFile(size: 50_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        let handle = try FileHandle(forWritingTo: file.url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(count: 1000))
        try handle.close()
        #expect(try readAsInputStream(request) == file.contents)
        #expect(try await MockRequest(request).readBody() == file.contents)
    }

    @Test(
        "a file replaced by another (renamed over it, as editors and Secret rotations do) fails the next send instead of sending a part of the other",
        arguments: [80_000, 50_000]
    )
    func fileReplacedBeforeReplay(newSize: Int) async throws {
        let file = try TemporaryFile(size: 50_000)
        defer { file.remove() }
        let request = try uploadRequest(.file(file.url))
        #expect(try readAsInputStream(request) == file.contents)
        let newer = file.url.appendingPathExtension("new")
        try Data(repeating: 0xAB, count: newSize).write(to: newer)
        #expect(rename(newer.path, file.url.path) == 0)
        let error = #expect(throws: (any Error).self) { try readAsInputStream(Replay.fresh(request)) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("replaced"))
        await #expect(throws: (any Error).self) { try await MockRequest(Replay.fresh(request)).readBody() }
    }

    @Test("a file replaced through a Secret mount's links (..data swapped) fails the next send")
    func secretRotatedBeforeReplay() throws {
        let volume = try ProjectedVolume()
        defer { volume.remove() }
        let request = try uploadRequest(.file(volume.url("token.bin")))
        #expect(try readAsInputStream(request) == volume.contents)
        let rotated = volume.url("..2026_11_27_20_00_00.000000002")
        try FileManager.default.createDirectory(at: rotated, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 60_000).write(to: rotated.appendingPathComponent("token.bin"))
        let swap = volume.url("..data_tmp")
        try FileManager.default.createSymbolicLink(atPath: swap.path, withDestinationPath: rotated.lastPathComponent)
        #expect(rename(swap.path, volume.url("..data").path) == 0)
        #expect(throws: (any Error).self) { try readAsInputStream(Replay.fresh(request)) }
    }

    @Test("a stream body calls its factory for each read and announces its length")
    func streamBody() async throws {
        let factory = ChunkFactory([Data("hello ".utf8), Data(), Data("world".utf8)])
        let request = try uploadRequest(.stream(length: 11, contentType: "text/plain") { factory.make() })
        #expect(uploadLength(of: request) == 11)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(factory.calls.value == 0)
        #expect(try await MockRequest(request).readBody() == Data("hello world".utf8))
        #expect(try readAsInputStream(request) == Data("hello world".utf8))
        #expect(factory.calls.value == 2)
    }

    @Test("a stream without a length announces none")
    func streamWithoutLength() async throws {
        let factory = ChunkFactory([Data("abc".utf8)])
        let request = try uploadRequest(.stream { factory.make() })
        #expect(uploadLength(of: request) == nil)
        #expect(try await MockRequest(request).readBody() == Data("abc".utf8))
    }

    @Test(
        "a stream that ends early or runs past its declared length fails the send",
        arguments: [5, 20] as [Int64]
    )
    func streamLengthMismatch(_ declared: Int64) async throws {
        let factory = ChunkFactory([Data("hello world".utf8)])
        let request = try uploadRequest(.stream(length: declared) { factory.make() })
        await #expect(throws: (any Error).self) { try await MockRequest(request).readBody() }
        #expect(throws: (any Error).self) { try readAsInputStream(request) }
    }

    @Test("a stream's error fails the read")
    func streamError() async throws {
        struct Broken: Error {}
        let request = try uploadRequest(
            .stream {
                AsyncThrowingStream<Data, any Error> { continuation in
                    continuation.yield(Data("a".utf8))
                    continuation.finish(throwing: Broken())
                }
            }
        )
        await #expect(throws: Broken.self) { try await MockRequest(request).readBody() }
        #expect(throws: Broken.self) { try readAsInputStream(request) }
    }
}
