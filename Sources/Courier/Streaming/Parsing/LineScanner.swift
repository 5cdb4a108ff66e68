/// Splits a byte stream, delivered in chunks of any size, into lines: a value that scans bytes and keeps at
/// most one partial line between chunks.
///
/// A line is handed out as the bytes between two line endings, without the ending. The first line loses a
/// leading UTF-8 byte-order mark (`EF BB BF`), once, as a UTF-8 decoder would. The scanner reads each byte
/// once; it copies bytes only when a line is split across chunks (into its one partial-line buffer).
///
/// The bound is checked on the line as it will be handed out (after the `CR` of a `CRLF` and the byte-order
/// mark are removed), so whether a line is too long does not depend on where the chunks were cut. A partial
/// line is refused as soon as it is certain to become too long, so memory stays bounded even when the
/// server never ends the line.
struct LineScanner: Sendable {
    /// Which bytes end a line.
    enum Endings: Sendable {
        /// `LF`, or `CRLF` (the `CR` is removed); a lone `CR` elsewhere is part of the line. JSON Lines and
        /// plain text lines.
        case lineFeed
        /// `CR`, `LF` or `CRLF`, a `CRLF` split across two chunks included: the event-stream rules.
        case anyNewline
    }

    /// Why a line was refused.
    struct LineTooLong: Error, Equatable {
        /// The 1-based number of the line.
        var lineNumber: Int
    }

    let endings: Endings
    /// The most bytes a line may hold.
    let maximumLength: Int

    /// The start of a line whose ending has not arrived yet.
    private var partial: [UInt8] = []
    /// Whether the previous chunk ended with a `CR` that ended a line, so an `LF` at the start of the next
    /// chunk completes that `CRLF` instead of ending an empty line (``Endings/anyNewline`` only).
    private var skipsLineFeed = false
    /// The number of lines handed out so far.
    private(set) var lineCount = 0

    /// A partial-line buffer that grew beyond this is released after its line, not kept for the next.
    private static let retainedCapacity = 64 * 1024

    init(endings: Endings, maximumLength: Int) {
        precondition(maximumLength > 0, "the maximum line length must be positive")
        self.endings = endings
        self.maximumLength = maximumLength
    }

    /// Finds the next complete line in `bytes` at or after `offset` and returns what `body` makes of it and of
    /// its 1-based line number.
    ///
    /// `offset` moves past the line and its ending. When `bytes` hold no further line ending, the rest is kept
    /// as the partial line, `offset` moves to the end, and the result is `nil`: call again with the next chunk.
    ///
    /// - Throws: ``LineTooLong`` for a line longer than ``maximumLength``; whatever `body` throws.
    mutating func nextLine<Result>(
        in bytes: UnsafeRawBufferPointer,
        from offset: inout Int,
        _ body: (_ line: UnsafeRawBufferPointer, _ lineNumber: Int) throws -> Result
    ) throws -> Result? {
        var start = offset
        if skipsLineFeed, start < bytes.count {
            skipsLineFeed = false
            if bytes[start] == ASCII.lineFeed { start += 1 }
        }
        let end = firstEnding(in: bytes, from: start)
        guard end < bytes.count else {
            offset = bytes.count
            try keep(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            return nil
        }
        offset = end + 1
        if endings == .anyNewline, bytes[end] == ASCII.carriageReturn {
            if offset < bytes.count {
                if bytes[offset] == ASCII.lineFeed { offset += 1 }
            } else {
                skipsLineFeed = true
            }
        }
        let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        if partial.isEmpty {
            return try emit(line, body)
        }
        var whole: [UInt8] = []
        swap(&whole, &partial)
        whole.append(contentsOf: line)
        defer {
            if whole.capacity <= Self.retainedCapacity {
                whole.removeAll(keepingCapacity: true)
                partial = whole
            }
        }
        return try whole.withUnsafeBytes { try emit($0, body) }
    }

    /// Ends the stream: returns what `body` makes of the last line if the stream did not end with a line
    /// ending (and is not just a byte-order mark), or `nil`.
    ///
    /// - Throws: ``LineTooLong`` if that line is too long; whatever `body` throws.
    mutating func finish<Result>(
        _ body: (_ line: UnsafeRawBufferPointer, _ lineNumber: Int) throws -> Result
    ) throws -> Result? {
        // A body that is only a byte-order mark holds no text, so no line.
        guard !partial.isEmpty, lineCount > 0 || partial != ASCII.byteOrderMark else {
            partial = []
            return nil
        }
        var whole: [UInt8] = []
        swap(&whole, &partial)
        return try whole.withUnsafeBytes { try emit($0, body) }
    }

    /// Runs `body` on the scanner, turning ``LineTooLong`` into a ``CourierError`` with code
    /// ``CourierError/Code/bodyTooLarge`` whose message names `stream`.
    mutating func refusingLongLines<Result>(
        in stream: String,
        _ body: (inout LineScanner) throws -> Result
    ) throws -> Result {
        do {
            return try body(&self)
        } catch let error as LineTooLong {
            throw CourierError.lineTooLong(lineNumber: error.lineNumber, maximum: maximumLength, in: stream)
        }
    }

    /// The index of the first line-ending byte at or after `start`, or `bytes.count`.
    private func firstEnding(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        switch endings {
        case .lineFeed:
            while index < bytes.count, bytes[index] != ASCII.lineFeed { index += 1 }
        case .anyNewline:
            while index < bytes.count {
                let byte = bytes[index]
                // Both endings are below 0x0E; one comparison rules out almost every other byte.
                if byte <= ASCII.carriageReturn, byte == ASCII.lineFeed || byte == ASCII.carriageReturn { break }
                index += 1
            }
        }
        return index
    }

    /// Keeps `bytes` as (the continuation of) the partial line, unless the line is now certain to be too long.
    private mutating func keep(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        // What may still be removed before the bound applies: a trailing CR, and a byte-order mark.
        var removable = endings == .lineFeed ? 1 : 0
        if lineCount == 0 { removable += ASCII.byteOrderMark.count }
        guard partial.count + bytes.count - removable <= maximumLength else {
            partial = []
            throw LineTooLong(lineNumber: lineCount + 1)
        }
        partial.append(contentsOf: bytes)
    }

    /// Removes the `CR` of a `CRLF` and a leading byte-order mark, checks the bound and hands the line out.
    private mutating func emit<Result>(
        _ line: UnsafeRawBufferPointer,
        _ body: (_ line: UnsafeRawBufferPointer, _ lineNumber: Int) throws -> Result
    ) throws -> Result {
        var line = line
        if endings == .lineFeed, line.last == ASCII.carriageReturn {
            line = UnsafeRawBufferPointer(rebasing: line.dropLast())
        }
        if lineCount == 0, line.starts(with: ASCII.byteOrderMark) {
            line = UnsafeRawBufferPointer(rebasing: line.dropFirst(ASCII.byteOrderMark.count))
        }
        lineCount += 1
        guard line.count <= maximumLength else { throw LineTooLong(lineNumber: lineCount) }
        return try body(line, lineCount)
    }
}

/// The bytes the parsers look for.
enum ASCII {
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let null: UInt8 = 0x00
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    /// The UTF-8 byte-order mark, U+FEFF.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
}
