public import Foundation

/// The values of a JSON Lines (NDJSON) body, one JSON text per line, decoded as `Element`: wraps any async
/// sequence of `Data` chunks.
///
/// ```swift
/// struct Row: Decodable { var id: Int; var name: String }
///
/// for try await row in JSONLineSequence(body, of: Row.self) {
///     print(row.id, row.name)
/// }
/// ```
///
/// - Lines end with `LF` or `CRLF`; the last line needs no line ending. Lines that are empty or hold only
///   spaces, tabs and `CR`s are skipped.
/// - A line that does not decode throws a ``CourierError`` with code ``CourierError/Code/decodingFailed``:
///   its message names the line number (counting every line from 1, skipped ones too) and quotes at most the
///   first 40 characters of the line, with secrets redacted; ``CourierError/underlying`` is the decoder's
///   error.
/// - A line longer than `maximumLineLength` bytes throws a ``CourierError`` with code
///   ``CourierError/Code/bodyTooLarge`` once that many bytes have arrived without a line ending.
///
/// The sequence reads the base only when you ask for the next value and starts no task, so cancelling the
/// consuming task cancels the base's read. After it throws or ends, it returns `nil`.
public struct JSONLineSequence<Base: AsyncSequence, Element: Decodable>: AsyncSequence where Base.Element == Data {
    /// The base's errors, and ``CourierError`` for a line that does not decode or is too long.
    public typealias Failure = any Error

    @usableFromInline let base: Base
    @usableFromInline let decoder: JSONDecoder
    @usableFromInline let maximumLineLength: Int

    /// Reads values from `base`.
    ///
    /// - Parameters:
    ///   - base: The body's chunks, of any size.
    ///   - type: The type of each line's value.
    ///   - decoder: The decoder for each line.
    ///   - maximumLineLength: The most bytes one line may hold, line ending excluded; 1 MiB by default. Must
    ///     be positive.
    public init(
        _ base: Base,
        of type: Element.Type = Element.self,
        decoder: JSONDecoder = JSONDecoder(),
        maximumLineLength: Int = 1024 * 1024
    ) {
        precondition(maximumLineLength > 0, "maximumLineLength must be positive")
        self.base = base
        self.decoder = decoder
        self.maximumLineLength = maximumLineLength
    }

    /// Starts reading the base.
    @inlinable
    public func makeAsyncIterator() -> AsyncIterator {
        let parser = JSONLineParser<Element>(decoder: decoder, maximumLength: maximumLineLength)
        return AsyncIterator(base: base.makeAsyncIterator(), parser: parser)
    }

    /// Reads the base's chunks.
    public typealias AsyncIterator = ParsingIterator<Base.AsyncIterator, Element>
}

extension JSONLineSequence: Sendable where Base: Sendable {}

/// Splits bytes into lines and decodes each non-blank one.
@usableFromInline
struct JSONLineParser<Value: Decodable>: ChunkParser {
    private let decoder: JSONDecoder
    private var scanner: LineScanner
    private static var streamName: String { "JSON Lines stream" }

    @usableFromInline
    init(decoder: JSONDecoder, maximumLength: Int) {
        self.decoder = decoder
        self.scanner = LineScanner(endings: .lineFeed, maximumLength: maximumLength)
    }

    @usableFromInline
    mutating func next(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> Value? {
        while offset < bytes.count {
            let line = try scanner.refusingLongLines(in: Self.streamName) { [decoder] scanner in
                try scanner.nextLine(in: bytes, from: &offset) { try Self.decode($0, with: decoder, lineNumber: $1) }
            }
            switch line {
            case .none: return nil
            case .some(.some(let value)): return value
            case .some(.none): continue  // a blank line
            }
        }
        return nil
    }

    @usableFromInline
    mutating func finish() throws -> Value? {
        let line = try scanner.refusingLongLines(in: Self.streamName) { [decoder] scanner in
            try scanner.finish { try Self.decode($0, with: decoder, lineNumber: $1) }
        }
        return line ?? nil
    }

    /// The line's value, or `nil` for a blank line.
    private static func decode(
        _ line: UnsafeRawBufferPointer,
        with decoder: JSONDecoder,
        lineNumber: Int
    ) throws -> Value? {
        guard line.contains(where: { $0 != ASCII.space && $0 != ASCII.tab && $0 != ASCII.carriageReturn }) else {
            return nil
        }
        do {
            return try decoder.decode(Value.self, from: Data(line))
        } catch {
            throw CourierError.lineNotDecodable(Value.self, lineNumber: lineNumber, line: line, underlying: error)
        }
    }
}
