import Foundation

/// One reading of a body whose segments include a multipart stream part: bytes as they are, files in chunks,
/// stream parts as their sequences give them, each held to its declared length.
///
/// The sequences of one-shot parts are taken when the reading begins, so a second reading of such a body fails
/// before its first byte instead of sending the parts before it again.
struct MixedSegments: AsyncSequence {
    typealias Element = Data

    let segments: [UploadSource.Segment]

    func makeAsyncIterator() -> Iterator { Iterator(segments) }

    struct Iterator: AsyncIteratorProtocol {
        private let segments: [UploadSource.Segment]
        private var index = 0
        /// The reader of the file being read.
        private var file: SegmentReader?
        /// The stream part being read, and how many bytes it has given.
        private var stream: (chunks: ChunkIterator, sent: Int64)?
        /// The chunks of the one-shot parts, taken when the reading began, by segment index.
        private var taken: [Int: ChunkIterator] = [:]
        /// Why the reading cannot begin: a one-shot part taken by an earlier reading.
        private var failure: (any Error)?

        init(_ segments: [UploadSource.Segment]) {
            self.segments = segments
            for (index, segment) in segments.enumerated() {
                guard case .stream(let part) = segment, !part.isReplayable else { continue }
                do {
                    taken[index] = try part.iterator()
                } catch {
                    failure = error
                    break
                }
            }
        }

        mutating func next() async throws -> Data? {
            if let failure {
                self.failure = nil
                taken = [:]
                index = segments.count
                throw failure
            }
            while index < segments.count {
                switch segments[index] {
                case .bytes(let data):
                    index += 1
                    if !data.isEmpty { return data }
                case .file:
                    let reader = file ?? SegmentReader([segments[index]])
                    file = reader
                    var data = Data(count: UploadChunks.chunkSize)
                    let count = try data.withUnsafeMutableBytes { try reader.read(into: $0) }
                    if count > 0 {
                        data.count = count
                        return data
                    }
                    file = nil
                    index += 1
                case .stream(let part):
                    if stream == nil {
                        let chunks = try taken.removeValue(forKey: index) ?? part.iterator()
                        stream = (chunks, 0)
                    }
                    guard let chunk = try await stream!.chunks.next() else {
                        let sent = stream?.sent ?? 0
                        stream = nil
                        index += 1
                        if let length = part.length, sent != length {
                            throw UploadError(
                                "the multipart part \"\(part.name)\" ended after \(sent) of the \(length) bytes it declared"
                            )
                        }
                        continue
                    }
                    guard !chunk.isEmpty else { continue }
                    let sent = (stream?.sent ?? 0) + Int64(chunk.count)
                    stream?.sent = sent
                    if let length = part.length, sent > length {
                        throw UploadError(
                            "the multipart part \"\(part.name)\" produced more than the \(length) bytes it declared"
                        )
                    }
                    return chunk
                }
            }
            return nil
        }
    }
}
