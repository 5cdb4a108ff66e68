public import Foundation

/// The Server-Sent Events of a streamed body (`text/event-stream`): wraps any async sequence of `Data` chunks.
///
/// ```swift
/// for try await event in ServerSentEventSequence(body) where event.type == "completion" {
///     print(event.data)
/// }
/// ```
///
/// The stream is read as the WHATWG HTML standard's EventSource does ("interpreting an event stream"):
/// - UTF-8, with a leading byte-order mark removed and invalid bytes read as U+FFFD; lines end with `CR`,
///   `LF` or `CRLF`, and a `CRLF` split between two chunks is one line ending.
/// - An empty line dispatches the event. `data` lines are joined with `LF`; a line starting with `:` is a
///   comment; in `name: value`, one space after the colon is removed, and a line without a colon is a field
///   with an empty value. Unknown fields are ignored.
/// - `event` sets the event's ``ServerSentEvent/type``; `id` sets the last event ID, which every later event
///   carries as ``ServerSentEvent/id`` (an `id` containing NUL is ignored); `retry` sets
///   ``ServerSentEvent/retry`` when its value is all ASCII digits (milliseconds).
/// - A block without `data` dispatches no event (its `id` still becomes the last event ID), and an event that
///   the stream ends before its empty line is discarded.
///
/// A line, or the data of one event, longer than `maximumEventSize` bytes throws a ``CourierError`` with code
/// ``CourierError/Code/bodyTooLarge`` as soon as that many bytes have arrived, so a server that never ends an
/// event cannot make the sequence hold more than that. Comments do not count toward an event's size.
///
/// The sequence reads the base only when you ask for the next event and starts no task, so cancelling the
/// consuming task cancels the base's read. After it throws or ends, it returns `nil`. It does not reconnect.
public struct ServerSentEventSequence<Base: AsyncSequence>: AsyncSequence where Base.Element == Data {
    /// An event.
    public typealias Element = ServerSentEvent
    /// The base's errors, and ``CourierError`` for a line or an event that is too large.
    public typealias Failure = any Error

    @usableFromInline let base: Base
    @usableFromInline let parser: ServerSentEventParser

    /// Reads events from `base`.
    ///
    /// - Parameters:
    ///   - base: The body's chunks, of any size.
    ///   - maximumEventSize: The most bytes one line, and the data of one event, may hold; 1 MiB by default.
    ///     Must be positive.
    public init(_ base: Base, maximumEventSize: Int = 1024 * 1024) {
        precondition(maximumEventSize > 0, "maximumEventSize must be positive")
        self.init(base, parser: ServerSentEventParser(maximumEventSize: maximumEventSize))
    }

    /// Reads events from `base` with `parser`, which may carry the last event ID and reconnection time of a
    /// previous connection.
    init(_ base: Base, parser: ServerSentEventParser) {
        self.base = base
        self.parser = parser
    }

    /// Starts reading the base.
    @inlinable
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), parser: EventParser(parser: parser))
    }

    /// Reads the base's chunks.
    public typealias AsyncIterator = ParsingIterator<Base.AsyncIterator, ServerSentEvent>
}

extension ServerSentEventSequence: Sendable where Base: Sendable {}

extension ParsingIterator where Element == ServerSentEvent {
    /// The state a reconnection carries over: the last event ID and the reconnection time so far (also after
    /// the iterator threw). `nil` only for an iterator that is not a ``ServerSentEventSequence``'s.
    var eventParser: ServerSentEventParser? { (parser as? EventParser)?.parser }
}

/// A ``ServerSentEventParser`` whose failures are ``CourierError``s.
@usableFromInline
struct EventParser: ChunkParser {
    private(set) var parser: ServerSentEventParser

    @usableFromInline
    init(parser: ServerSentEventParser) {
        self.parser = parser
    }

    @usableFromInline
    mutating func next(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> ServerSentEvent? {
        do {
            return try parser.nextEvent(in: bytes, from: &offset)
        } catch let failure as ServerSentEventParser.Failure {
            throw courierError(failure)
        }
    }

    @usableFromInline
    mutating func finish() throws -> ServerSentEvent? {
        do {
            try parser.finish()
        } catch let failure as ServerSentEventParser.Failure {
            throw courierError(failure)
        }
        return nil
    }

    private func courierError(_ failure: ServerSentEventParser.Failure) -> CourierError {
        switch failure {
        case .lineTooLong(let lineNumber):
            .lineTooLong(lineNumber: lineNumber, maximum: parser.maximumEventSize, in: "event stream")
        case .dataTooLarge(let lineNumber):
            .eventTooLarge(lineNumber: lineNumber, maximum: parser.maximumEventSize)
        }
    }
}
