public import Foundation

/// Something that turns bytes into values chunk by chunk: one of the parsers behind the public sequences.
@usableFromInline
protocol ChunkParser<Output> {
    associatedtype Output

    /// Returns the next value that the bytes of `bytes` from `offset` on complete, moving `offset` past what
    /// it read; `nil` once `bytes` are used up (what is left of an unfinished value is kept).
    mutating func next(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> Output?

    /// Ends the stream: returns the value its unterminated end completes, if any. Called once.
    mutating func finish() throws -> Output?
}

/// The iterator of ``LineSequence``, ``ServerSentEventSequence`` and ``JSONLineSequence``: pulls the base's
/// chunks and hands out what they parse into.
///
/// It reads the base only when asked for the next element, in the caller's task, and starts no task of its
/// own: cancelling the consuming task reaches the base's `next`, and a `CancellationError` from the base comes
/// through as it is. After the base ends or anything throws, it returns `nil`.
public struct ParsingIterator<Base: AsyncIteratorProtocol, Element>: AsyncIteratorProtocol where Base.Element == Data {
    // Inlinable so that a caller's module specializes it for its base: unspecialized generic code looks types
    // up at run time for every element, which cost a third of the parsing time.
    @usableFromInline var base: Base
    @usableFromInline var parser: any ChunkParser<Element>
    /// The chunk being parsed, and how far.
    @usableFromInline var chunk = Data()
    @usableFromInline var offset = 0
    @usableFromInline var isFinished = false

    @inlinable
    init(base: Base, parser: any ChunkParser<Element>) {
        self.base = base
        self.parser = parser
    }

    /// The next element, or `nil` at the end of the body.
    @inlinable
    public mutating func next() async throws -> Element? {
        try await next(isolation: nil)
    }

    /// The next element, or `nil` at the end of the body, for a caller isolated to `actor`.
    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
        guard !isFinished else { return nil }
        do {
            while true {
                if offset < chunk.count {
                    let chunk = self.chunk
                    if let element = try chunk.withUnsafeBytes({ try parser.next(in: $0, from: &offset) }) {
                        return element
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
