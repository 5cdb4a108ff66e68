package import Foundation

/// Where a streamed request body's bytes come from. It is a recipe, not a reader: every send makes its own
/// reader from it (``UploadChunks`` for transports that read asynchronously, ``UploadBodyStream`` for those
/// that read an `InputStream`), which is what makes these bodies replayable.
package struct UploadSource: Sendable {
    /// A piece of a body.
    enum Segment: Sendable {
        case bytes(Data)
        /// A regular file's first `length` bytes, its size when the request was built; `identity` is the file's
        /// then, so that a send after the path was given to another file (renamed over it) fails instead of sending
        /// a part of that one.
        case file(path: String, length: Int64, identity: FileIdentity)
        /// A multipart stream part's chunks, read asynchronously.
        case stream(PartChunks)

        /// The segment's length, when known.
        var length: Int64? {
            switch self {
            case .bytes(let data): Int64(data.count)
            case .file(_, let length, _): length
            case .stream(let chunks): chunks.length
            }
        }
    }

    enum Origin: Sendable {
        /// Bytes and files, read in order, synchronously.
        case segments([Segment])
        /// A factory of chunk sequences, called once per send: the user's, or one over segments that include a
        /// stream part.
        case stream(@Sendable () -> ChunkIterator)
    }

    let origin: Origin
    /// The body's length in bytes, when known in advance.
    let length: Int64?
    /// Told after every chunk the transport reads.
    var progress: (@Sendable (UploadProgress) -> Void)?
    /// The name of a one-shot multipart stream part in the body, which makes the body readable only once.
    let oneShotPart: String?

    /// A body of `segments`, read in order; with a stream part among them, a pass reads them asynchronously.
    init(segments: [Segment], progress: (@Sendable (UploadProgress) -> Void)? = nil) {
        if segments.contains(where: { if case .stream = $0 { true } else { false } }) {
            origin = .stream { ChunkIterator(MixedSegments(segments: segments)) }
        } else {
            origin = .segments(segments)
        }
        length = segments.reduce(Int64(0)) { total, segment in
            guard let total, let length = segment.length else { return nil }
            return total + length
        }
        oneShotPart =
            segments.lazy.compactMap { segment -> String? in
                guard case .stream(let chunks) = segment, !chunks.isReplayable else { return nil }
                return chunks.name
            }.first
        self.progress = progress
    }

    init(length: Int64?, makeIterator: @escaping @Sendable () -> ChunkIterator) {
        origin = .stream(makeIterator)
        self.length = length
        progress = nil
        oneShotPart = nil
    }

    /// Whether every send may read the body again from its first byte; see ``Replay``.
    package var isReplayable: Bool { oneShotPart == nil }

    /// Why the body cannot be sent again, for ``Replay``'s error; `nil` when it can.
    package var whyNotReplayable: String? {
        oneShotPart.map { name in
            "its multipart part \"\(name)\" is a one-shot stream (.stream(_:once:)), which can be read only once; "
                + "make the part with a closure that returns a new sequence for each send, or from a file, so it "
                + "can be sent again"
        }
    }

    /// One pass over the bytes, for a transport that reads asynchronously.
    var chunks: UploadChunks { UploadChunks(source: self) }

    /// Reads the whole body into memory: for tests and for transports that cannot stream.
    package func collect() async throws -> Data {
        var data = Data()
        for try await chunk in chunks { data.append(chunk) }
        return data
    }

    /// A file body part: the regular file at `url` (through any symbolic links to it), checked to exist, with its
    /// size and identity now.
    static func fileSegment(at url: URL) throws -> Segment {
        guard url.isFileURL else { throw UploadError("\(url.absoluteString) is not a file URL") }
        let status = try FileStatus.regularFile(atPath: url.path)
        return .file(path: url.path, length: status.size, identity: status.fileIdentity)
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
            // Bytes and files always have a length.
            let length = segment.length ?? 0
            let remaining = length - offset
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
            case .file(let path, let length, let identity):
                if file == nil { file = try FileReader(path: path, expecting: identity) }
                count = try file!.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]))
                if count == 0 {
                    throw UploadError(
                        "\(path) ended after \(offset) of its \(length) bytes: it changed while it was sent"
                    )
                }
            case .stream:
                preconditionFailure("a SegmentReader reads bytes and files only")
            }
            offset += Int64(count)
            if offset == length { advance() }
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
