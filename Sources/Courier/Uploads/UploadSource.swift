package import Foundation

/// Where a streamed request body's bytes come from. It is a recipe, not a reader: every send makes its own
/// reader from it (``UploadChunks`` for transports that read asynchronously, ``UploadBodyStream`` for those
/// that read an `InputStream`), which is what makes these bodies replayable.
package struct UploadSource: Sendable {
    /// A piece of a body that can be read synchronously.
    enum Segment: Sendable {
        case bytes(Data)
        /// A regular file's first `length` bytes, its size when the request was built.
        case file(path: String, length: Int64)

        var length: Int64 {
            switch self {
            case .bytes(let data): Int64(data.count)
            case .file(_, let length): length
            }
        }
    }

    enum Origin: Sendable {
        /// Bytes and files, read in order.
        case segments([Segment])
        /// The user's factory of chunk sequences, called once per send.
        case stream(@Sendable () -> ChunkIterator)
    }

    let origin: Origin
    /// The body's length in bytes, when known in advance.
    let length: Int64?
    /// Told after every chunk the transport reads.
    var progress: (@Sendable (UploadProgress) -> Void)?

    init(segments: [Segment], progress: (@Sendable (UploadProgress) -> Void)? = nil) {
        origin = .segments(segments)
        length = segments.reduce(0) { $0 + $1.length }
        self.progress = progress
    }

    init(length: Int64?, makeIterator: @escaping @Sendable () -> ChunkIterator) {
        origin = .stream(makeIterator)
        self.length = length
        progress = nil
    }

    /// One pass over the bytes, for a transport that reads asynchronously.
    var chunks: UploadChunks { UploadChunks(source: self) }

    /// Reads the whole body into memory: for tests and for transports that cannot stream.
    package func collect() async throws -> Data {
        var data = Data()
        for try await chunk in chunks { data.append(chunk) }
        return data
    }

    /// The size of a file body part, checked to be a regular file that exists.
    static func fileLength(of url: URL) throws -> Int64 {
        guard url.isFileURL else { throw UploadError("\(url.absoluteString) is not a file URL") }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        } catch {
            throw UploadError("\(url.path) does not exist or cannot be read")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw UploadError("\(url.path) is not a regular file")
        }
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// Why a streamed body could not be read: a file that changed size while it was sent, a stream whose length
/// differs from the one it declared.
struct UploadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A type-erased iterator over the user's chunk sequence. Not `Sendable`: one pass reads it from one task.
final class ChunkIterator {
    private let nextChunk: () async throws -> Data?

    init<Chunks: AsyncSequence>(_ chunks: Chunks) where Chunks.Element == Data {
        var iterator = chunks.makeAsyncIterator()
        nextChunk = { try await iterator.next() }
    }

    func next() async throws -> Data? { try await nextChunk() }
}

/// Counts what one pass has read: reports progress, and holds a declared length to its word.
struct UploadCounter {
    let length: Int64?
    let progress: (@Sendable (UploadProgress) -> Void)?
    private(set) var sent: Int64 = 0

    init(_ source: UploadSource) {
        length = source.length
        progress = source.progress
    }

    mutating func add(_ count: Int) throws {
        sent += Int64(count)
        if let length, sent > length {
            throw UploadError("the body produced more than the \(length) bytes it declared")
        }
        progress?(UploadProgress(bytesSent: sent, totalBytes: length))
    }

    func finish() throws {
        if let length, sent != length {
            throw UploadError("the body ended after \(sent) of the \(length) bytes it declared")
        }
    }
}

/// Reads segments in order, synchronously; a file is open only while it is being read, and is closed when it
/// has been read, when the pass is closed, or when the reader is dropped.
final class SegmentReader {
    private let segments: [UploadSource.Segment]
    private var index = 0
    private var offset: Int64 = 0
    private var file: FileReader?

    init(_ segments: [UploadSource.Segment]) {
        self.segments = segments
    }

    /// Fills the start of `buffer`; returns 0 at the end of the body.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while index < segments.count {
            let segment = segments[index]
            let remaining = segment.length - offset
            guard remaining > 0 else {
                advance()
                continue
            }
            let wanted = Int(min(Int64(buffer.count), remaining))
            let count: Int
            switch segment {
            case .bytes(let data):
                let start = data.startIndex + Int(offset)
                data.copyBytes(
                    to: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]),
                    from: start..<start + wanted
                )
                count = wanted
            case .file(let path, let length):
                if file == nil { file = try FileReader(path: path) }
                count = try file!.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]))
                if count == 0 {
                    throw UploadError(
                        "\(path) ended after \(offset) of its \(length) bytes: it changed while it was sent"
                    )
                }
            }
            offset += Int64(count)
            if offset == segment.length { advance() }
            return count
        }
        return 0
    }

    private func advance() {
        file?.close()
        file = nil
        index += 1
        offset = 0
    }

    func close() {
        file?.close()
        file = nil
        index = segments.count
    }
}

/// One pass over an ``UploadSource`` as chunks of `Data`: what an asynchronous transport sends.
struct UploadChunks: AsyncSequence, Sendable {
    typealias Element = Data

    /// The size of the chunks read from bytes and files.
    static let chunkSize = 128 * 1024

    let source: UploadSource

    func makeAsyncIterator() -> Iterator { Iterator(source) }

    struct Iterator: AsyncIteratorProtocol {
        private enum Reader {
            case segments(SegmentReader)
            case stream(ChunkIterator)
        }

        private let reader: Reader
        private var counter: UploadCounter
        private var finished = false

        init(_ source: UploadSource) {
            switch source.origin {
            case .segments(let segments): reader = .segments(SegmentReader(segments))
            case .stream(let make): reader = .stream(make())
            }
            counter = UploadCounter(source)
        }

        mutating func next() async throws -> Data? {
            guard !finished else { return nil }
            while true {
                try Task.checkCancellation()
                var chunk: Data?
                switch reader {
                case .segments(let segments):
                    var data = Data(count: Self.chunkSize)
                    let count = try data.withUnsafeMutableBytes { try segments.read(into: $0) }
                    if count > 0 {
                        data.count = count
                        chunk = data
                    }
                case .stream(let iterator):
                    chunk = try await iterator.next()
                }
                guard let chunk else {
                    finished = true
                    try counter.finish()
                    return nil
                }
                guard !chunk.isEmpty else { continue }
                try counter.add(chunk.count)
                return chunk
            }
        }

        private static var chunkSize: Int { UploadChunks.chunkSize }
    }
}
