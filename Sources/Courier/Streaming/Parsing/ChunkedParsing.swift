public import Foundation

/// Something that turns bytes into values chunk by chunk: one of the parsers behind the public sequences.
@usableFromInline
protocol ChunkParser {
    associatedtype Output

    /// Returns the next value that the bytes of `bytes` from `offset` on complete, moving `offset` past what
    /// it read; `nil` once `bytes` are used up (what is left of an unfinished value is kept).
    mutating func next(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> Output?

    /// Ends the stream: returns the value its unterminated end completes, if any. Called once.
    mutating func finish() throws -> Output?
}

/// The loop behind the public sequences: pulls chunks from the base iterator and feeds them to a parser.
///
/// It never starts a task: each value is produced in the caller's `next`, so cancelling the consuming task
/// reaches the base iterator's `next`. After the base ends or anything throws, it returns `nil`.
///
/// It is inlinable so that a caller's module specializes it for its base: unspecialized generic code looks
/// types up at run time for every value, which cost a third of the parsing time.
@usableFromInline
struct ChunkedParsing<Base: AsyncIteratorProtocol, Parser: ChunkParser> where Base.Element == Data {
    @usableFromInline var base: Base
    /// The parser, for state a caller reads between values (the last event ID of an event stream).
    @usableFromInline var parser: Parser
    /// The chunk being parsed, and how far.
    @usableFromInline var chunk = Data()
    @usableFromInline var offset = 0
    @usableFromInline var isFinished = false

    @inlinable
    init(base: Base, parser: Parser) {
        self.base = base
        self.parser = parser
    }

    @inlinable
    mutating func next(isolation actor: isolated (any Actor)?) async throws -> Parser.Output? {
        guard !isFinished else { return nil }
        do {
            while true {
                if offset < chunk.count {
                    let chunk = self.chunk
                    if let output = try chunk.withUnsafeBytes({ try parser.next(in: $0, from: &offset) }) {
                        return output
                    }
                }
                guard let next = try await base.next(isolation: actor) else {
                    end()
                    return try parser.finish()
                }
                chunk = next
                offset = 0
            }
        } catch {
            end()
            throw error
        }
    }

    @inlinable
    mutating func end() {
        isFinished = true
        chunk = Data()
        offset = 0
    }
}
