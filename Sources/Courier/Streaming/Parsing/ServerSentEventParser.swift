/// Interprets an event stream (`text/event-stream`) chunk by chunk, following the WHATWG HTML rules
/// ("Server-sent events", *interpreting an event stream*): a value that lines go into and events come out of.
///
/// - The stream is UTF-8; a leading byte-order mark is removed once; invalid bytes become U+FFFD.
/// - Lines end with `CR`, `LF` or `CRLF`; a `CRLF` split across two chunks is one line ending.
/// - An empty line dispatches the event; a line starting with `:` is a comment; `name: value` sets a field
///   (one space after the colon is removed); a line without a colon is a field with an empty value.
/// - `data` lines are joined with `LF`; `event` sets the type (`message` when empty); `id` sets the last event
///   ID unless it contains NUL; `retry` sets the reconnection time when it is all ASCII digits; other fields
///   are ignored.
/// - A block with no `data` dispatches nothing, but its `id` still becomes the last event ID.
/// - The end of the stream discards an event that no empty line ended.
///
/// It is internal: the public entry point is ``ServerSentEventSequence``, which turns any async sequence of
/// `Data` into events. A reconnecting client carries ``lastEventID`` and ``reconnectionTime`` over to the
/// parser of the next connection with ``init(maximumEventSize:lastEventID:reconnectionTime:)``.
@usableFromInline
struct ServerSentEventParser: Sendable {
    /// Why the stream was refused.
    enum Failure: Error, Equatable {
        /// A line of the stream is longer than the maximum event size.
        case lineTooLong(lineNumber: Int)
        /// The data of one event, its lines joined, is longer than the maximum event size.
        case dataTooLarge(lineNumber: Int)
    }

    /// The last event ID of the stream: what a reconnection sends as `Last-Event-ID` (nothing when empty).
    ///
    /// Set by the `id` field of each block an empty line ends, whether or not the block had data.
    var lastEventID: String { fields.lastEventID }

    /// The reconnection time the server asked for with its last valid `retry` field, or `nil` if it did not.
    var reconnectionTime: Duration? { fields.reconnectionTime }

    /// The most bytes a line, and the data of one event, may hold.
    var maximumEventSize: Int { scanner.maximumLength }

    private var scanner: LineScanner
    private var fields: EventFields

    /// Creates a parser for one connection.
    ///
    /// - Parameters:
    ///   - maximumEventSize: The most bytes one line, and the data of one event, may hold.
    ///   - lastEventID: The last event ID of the previous connection, for a reconnection: events of this
    ///     connection carry it until the server sends another `id` (as browsers do).
    ///   - reconnectionTime: The reconnection time of the previous connection.
    init(maximumEventSize: Int, lastEventID: String = "", reconnectionTime: Duration? = nil) {
        self.scanner = LineScanner(endings: .anyNewline, maximumLength: maximumEventSize)
        self.fields = EventFields(lastEventID: lastEventID, reconnectionTime: reconnectionTime)
    }

    /// Reads lines of `bytes` from `offset` on until one dispatches an event, and returns it; `nil` once
    /// `bytes` are used up (a partial line is kept for the next chunk).
    ///
    /// - Throws: ``Failure`` when a line or an event's data is longer than ``maximumEventSize``.
    mutating func nextEvent(in bytes: UnsafeRawBufferPointer, from offset: inout Int) throws -> ServerSentEvent? {
        let limit = scanner.maximumLength
        do {
            while offset < bytes.count {
                let outcome = try scanner.nextLine(in: bytes, from: &offset) { line, _ in
                    try fields.interpret(line, maximumDataSize: limit)
                }
                switch outcome {
                case .none: return nil
                case .some(.some(let event)): return event
                case .some(.none): continue
                }
            }
            return nil
        } catch let error as LineScanner.LineTooLong {
            throw Failure.lineTooLong(lineNumber: error.lineNumber)
        } catch is EventFields.DataTooLarge {
            throw Failure.dataTooLarge(lineNumber: scanner.lineCount)
        }
    }

    /// Ends the stream: an event that no empty line ended is discarded, and so is an unterminated last line.
    ///
    /// - Throws: ``Failure/lineTooLong(lineNumber:)`` when that last line is longer than ``maximumEventSize``.
    mutating func finish() throws {
        fields.discardEvent()
        do {
            _ = try scanner.finish { _, _ in () }
        } catch let error as LineScanner.LineTooLong {
            throw Failure.lineTooLong(lineNumber: error.lineNumber)
        }
    }
}

/// The buffers of the event being read, and the state that outlives it.
private struct EventFields: Sendable {
    /// A `data` line would make the event's data longer than allowed.
    struct DataTooLarge: Error {}

    var lastEventID: String
    var reconnectionTime: Duration?
    /// The `data` values read so far, each followed by `LF`.
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType = ""
    private var lastEventIDBuffer: String
    /// The `retry` of the event being read, if a valid one came.
    private var retry: Duration?

    init(lastEventID: String, reconnectionTime: Duration?) {
        self.lastEventID = lastEventID
        self.lastEventIDBuffer = lastEventID
        self.reconnectionTime = reconnectionTime
    }

    /// Processes one line; returns the event an empty line dispatches.
    mutating func interpret(
        _ line: UnsafeRawBufferPointer,
        maximumDataSize: Int
    ) throws -> ServerSentEvent? {
        guard let first = line.first else { return dispatch() }
        if first == ASCII.colon { return nil }
        let name: UnsafeRawBufferPointer
        var value: UnsafeRawBufferPointer
        if let colon = line.firstIndex(of: ASCII.colon) {
            name = UnsafeRawBufferPointer(rebasing: line[..<colon])
            value = UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])
            if value.first == ASCII.space { value = UnsafeRawBufferPointer(rebasing: value.dropFirst()) }
        } else {
            name = line
            value = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        switch FieldName(name) {
        case .data:
            // The joined data is what the stored bytes hold, less the trailing LF.
            guard data.count + value.count <= maximumDataSize else {
                throw DataTooLarge()
            }
            data.append(contentsOf: value)
            data.append(ASCII.lineFeed)
            hasData = true
        case .event:
            eventType = String(decoding: value, as: UTF8.self)
        case .id:
            if !value.contains(ASCII.null) { lastEventIDBuffer = String(decoding: value, as: UTF8.self) }
        case .retry:
            if let milliseconds = Self.milliseconds(value) {
                retry = .milliseconds(milliseconds)
                reconnectionTime = retry
            }
        case .other:
            break
        }
        return nil
    }

    /// Forgets the event being read (at the end of the stream). The last event ID buffer is not committed.
    mutating func discardEvent() {
        data.removeAll(keepingCapacity: false)
        hasData = false
        eventType = ""
        retry = nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = lastEventIDBuffer
        defer {
            data.removeAll(keepingCapacity: data.capacity <= 64 * 1024)
            hasData = false
            eventType = ""
            retry = nil
        }
        guard hasData else { return nil }
        let text = data.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0.dropLast()), as: UTF8.self)
        }
        return ServerSentEvent(
            type: eventType.isEmpty ? "message" : eventType,
            data: text,
            id: lastEventID.isEmpty ? nil : lastEventID,
            retry: retry
        )
    }

    /// The value of a `retry` field: one or more ASCII digits, as milliseconds (saturating at `Int64.max`), or
    /// `nil`.
    private static func milliseconds(_ value: UnsafeRawBufferPointer) -> Int64? {
        NetworkNumber.digits(value)
    }
}

/// The field names the event-stream rules know (compared byte for byte, case-sensitively).
private enum FieldName {
    case data
    case event
    case id
    case retry
    case other

    init(_ bytes: UnsafeRawBufferPointer) {
        // Compared as bytes: a generic `elementsEqual` with a string's UTF-8 view costs more than the rest of
        // the line's interpretation.
        switch bytes.count {
        case 2 where Self.matches(bytes, "id"): self = .id
        case 4 where Self.matches(bytes, "data"): self = .data
        case 5 where Self.matches(bytes, "event"): self = .event
        case 5 where Self.matches(bytes, "retry"): self = .retry
        default: self = .other
        }
    }

    /// Whether `bytes` are `name`'s, of which there are as many (the callers checked the count).
    private static func matches(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        let expected = name.utf8Start
        for index in 0..<bytes.count where bytes[index] != expected[index] { return false }
        return true
    }
}
