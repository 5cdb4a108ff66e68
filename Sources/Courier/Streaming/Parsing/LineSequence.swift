public import Foundation

/// The lines of a streamed body, as `String`s: wraps any async sequence of `Data` chunks.
///
/// ```swift
/// for try await line in LineSequence(body) {
///     print(line)
/// }
/// ```
///
/// - A line ends with `LF` or `CRLF` (the `CR` is removed, also when the `LF` comes in the next chunk); a `CR`
///   elsewhere is part of the line. A last line without a line ending is returned too.
/// - Empty lines are returned as `""`, not skipped.
/// - Lines are decoded as UTF-8: a leading byte-order mark is removed, invalid bytes become U+FFFD.
/// - A line longer than `maximumLineLength` bytes throws a ``CourierError`` with code
///   ``CourierError/Code/bodyTooLarge``, once that many bytes have arrived without a line ending: a server that
///   never ends a line cannot make the sequence hold more than one bounded line.
///
/// The sequence reads the base only when you ask for the next line and starts no task, so cancelling the
/// consuming task cancels the base's read. After it throws or ends, it returns `nil`.
public struct LineSequence<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// A line, without its line ending.
    public typealias Element = String
    /// The base's errors, and ``CourierError`` for a line that is too long.
    public typealias Failure = any Error

    @usableFromInline let base: Base
    @usableFromInline let maximumLineLength: Int

    /// Reads lines from `base`.
    ///
    /// - Parameters:
    ///   - base: The body's chunks, of any size.
    ///   - maximumLineLength: The most bytes one line may hold, line ending excluded; 1 MiB by default. Must
    ///     be positive.
    public init(_ base: Base, maximumLineLength: Int = 1024 * 1024) {
        precondition(maximumLineLength > 0, "maximumLineLength must be positive")
        self.base = base
        self.maximumLineLength = maximumLineLength
    }

    /// Starts reading the base.
    @inlinable
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), parser: LineParser(maximumLength: maximumLineLength))
    }

    /// Reads the base's chunks.
    public typealias AsyncIterator = ParsingIterator<Base.AsyncIterator, String>
}

extension LineSequence: Sendable where Base: Sendable {}

/// Splits bytes into `String` lines.
@usableFromInline
struct LineParser: ChunkParser {
    private var scanner: LineScanner

    @usableFromInline
    init(maximumLength: Int) {
        scanner = LineScanner(endings: .lineFeed, maximumLength: maximumLength)
    }

    @usableFromInline
    mutating func next(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> String? {
        try scanner.refusingLongLines(in: "streamed body") { try $0.nextLine(in: bytes, from: &offset, Self.text) }
    }

    @usableFromInline
    mutating func finish() throws -> String? {
        try scanner.refusingLongLines(in: "streamed body") { try $0.finish(Self.text) }
    }

    private static func text(_ line: UnsafeRawBufferPointer, _: Int) -> String {
        String(decoding: line, as: UTF8.self)
    }
}
