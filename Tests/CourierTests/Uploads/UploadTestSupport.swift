import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A temporary file with known contents, removed by `remove()`.
struct TemporaryFile {
    let url: URL
    let contents: Data

    /// A file of `size` bytes whose every byte depends on its offset, so a misplaced chunk shows.
    init(size: Int, name: String = "upload.bin") throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-uploads-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = directory.appendingPathComponent(name)
        contents = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        try contents.write(to: url)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
    }

    /// Whether this process has the file open, read from the links in `/proc/self/fd` (Linux only).
    var isOpen: Bool {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.contains { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == url.path
        }
    }
}

/// Builds the `URLRequest` Courier would send for `body`.
func uploadRequest(_ body: RequestBody, method: HTTPMethod = .put) throws -> URLRequest {
    try Request<Data>(method: method, target: .path("/upload"), body: body).urlRequest(baseURL: exampleBaseURL)
}

/// Reads a request's body the way URLSession does: open, `read` until 0, close (on the calling thread).
func readAsInputStream(_ request: URLRequest, maxLength: Int = 16 * 1024) throws -> Data {
    let stream = try #require(request.httpBodyStream)
    stream.open()
    defer { stream.close() }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: maxLength)
    while true {
        let count = stream.read(&buffer, maxLength: maxLength)
        if count < 0 { throw stream.streamError ?? CancellationError() }
        if count == 0 { return data }
        data.append(contentsOf: buffer[..<count])
    }
}

/// The length a streamed body announces to the transport (`nil` when unknown).
func uploadLength(of request: URLRequest) -> Int64? {
    (request.httpBodyStream as? UploadBodyStream)?.source.length
}

/// Chunks in an async stream made fresh by each call, counting the calls.
final class ChunkFactory: Sendable {
    let chunks: [Data]
    let calls = Locked(0)

    init(_ chunks: [Data]) { self.chunks = chunks }

    var joined: Data { chunks.reduce(Data(), +) }

    func make() -> AsyncStream<Data> {
        calls.withLock { $0 += 1 }
        let chunks = chunks
        return AsyncStream { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
    }
}
