import CourierTesting
import Foundation
import Testing

@testable import Courier

/// A body delivered in the given chunks, in memory.
struct Chunks: AsyncSequence, Sendable {
    typealias Element = Data

    var chunks: [Data]

    init(_ chunks: [Data]) {
        self.chunks = chunks
    }

    /// `bytes` cut at `cuts` (offsets, ascending).
    init(_ bytes: [UInt8], cutAt cuts: [Int]) {
        var chunks: [Data] = []
        var start = 0
        for cut in cuts + [bytes.count] where cut >= start {
            chunks.append(Data(bytes[start..<cut]))
            start = cut
        }
        self.chunks = chunks
    }

    /// `text` as UTF-8, cut into chunks of `size` bytes.
    init(_ text: String, chunkSize size: Int = .max) {
        self.init(Array(text.utf8), chunkSize: size)
    }

    /// `bytes` cut into chunks of `size` bytes.
    init(_ bytes: [UInt8], chunkSize size: Int) {
        self.init(bytes, cutAt: Array(stride(from: size, to: bytes.count, by: size)))
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(remaining: chunks[...])
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Data>

        mutating func next() async -> Data? {
            remaining.popFirst()
        }
    }
}

/// A body that sends the given chunks and then fails with `error`.
struct FailingChunks<Failure: Error>: AsyncSequence {
    typealias Element = Data

    var chunks: [Data]
    var error: Failure

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(remaining: chunks[...], error: error)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Data>
        var error: Failure

        mutating func next() async throws -> Data? {
            if let chunk = remaining.popFirst() { return chunk }
            throw error
        }
    }
}

/// A body that never ends: the same chunk forever. It counts the bytes it handed out.
final class EndlessChunks: AsyncSequence {
    typealias Element = Data

    let chunk: Data
    private(set) var bytesSent = 0

    init(_ text: String) {
        chunk = Data(text.utf8)
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(body: self)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: EndlessChunks

        mutating func next() async -> Data? {
            body.bytesSent += body.chunk.count
            return body.chunk
        }
    }
}

/// A body whose first read waits until the reading task is cancelled, then throws `CancellationError`.
struct SilentBody: AsyncSequence, Sendable {
    typealias Element = Data

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator()
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        mutating func next() async throws -> Data? {
            // Not a synchronization sleep: it stands for a server that sends nothing, until cancelled.
            try await Task.sleep(for: .seconds(3_600))
            return nil
        }
    }
}

extension AsyncSequence {
    /// All elements; throws what the sequence throws.
    func elements() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }

    /// All elements, or the error that ended the sequence after the elements before it.
    func collected() async -> (elements: [Element], error: (any Error)?) {
        var elements: [Element] = []
        do {
            for try await element in self { elements.append(element) }
            return (elements, nil)
        } catch {
            return (elements, error)
        }
    }
}

/// Ways to cut a byte stream into chunks.
enum Chunking: CaseIterable, CustomTestStringConvertible, Sendable {
    case whole
    case singleBytes
    /// Random sizes from 1 to 16 bytes, empty chunks in between.
    case random
    /// A cut right after every `CR`, so every `CRLF` is split.
    case afterEachCarriageReturn

    var testDescription: String {
        switch self {
        case .whole: "whole"
        case .singleBytes: "1-byte chunks"
        case .random: "random chunks"
        case .afterEachCarriageReturn: "cut after each CR"
        }
    }

    func cuts(_ bytes: [UInt8], using random: inout SplitMix64) -> [Int] {
        switch self {
        case .whole:
            return []
        case .singleBytes:
            return Array(0...bytes.count)
        case .random:
            var cuts: [Int] = []
            var position = 0
            while position < bytes.count {
                if Int.random(in: 0..<8, using: &random) == 0 { cuts.append(position) }  // an empty chunk
                position += Int.random(in: 1...16, using: &random)
                cuts.append(min(position, bytes.count))
            }
            return cuts
        case .afterEachCarriageReturn:
            return bytes.indices.filter { bytes[$0] == 0x0D }.map { $0 + 1 }
        }
    }

    func chunks(_ bytes: [UInt8], seed: UInt64 = 0) -> Chunks {
        var random = SplitMix64(seed: seed)
        return Chunks(bytes, cutAt: cuts(bytes, using: &random))
    }
}

/// Runs a parser over `bytes` synchronously, cut into `chunks`, and returns its events and final state.
func parseEvents(
    _ bytes: [UInt8],
    chunking: Chunking = .whole,
    parser: ServerSentEventParser = ServerSentEventParser(maximumEventSize: 1 << 20)
) throws -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
    var parser = parser
    var events: [ServerSentEvent] = []
    for chunk in chunking.chunks(bytes).chunks {
        try chunk.withUnsafeBytes { buffer in
            var offset = 0
            while let event = try parser.nextEvent(in: buffer, from: &offset) { events.append(event) }
            #expect(offset == buffer.count)
        }
    }
    try parser.finish()
    return (events, parser)
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

/// The UTF-8 byte-order mark.
let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
