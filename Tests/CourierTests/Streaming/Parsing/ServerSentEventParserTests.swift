import Foundation
import Testing

@testable import Courier

/// One row of the WHATWG table: a stream, the events it dispatches, and the state it leaves.
struct EventStreamCase: CustomTestStringConvertible, Sendable {
    var name: String
    var stream: [UInt8]
    var events: [ServerSentEvent]
    var lastEventID = ""
    var reconnectionTime: Duration?

    var testDescription: String { name }

    init(
        _ name: String,
        _ stream: String,
        _ events: [ServerSentEvent],
        lastEventID: String = "",
        reconnectionTime: Duration? = nil
    ) {
        self.init(name, bytes: Array(stream.utf8), events, lastEventID: lastEventID, reconnectionTime: reconnectionTime)
    }

    init(
        _ name: String,
        bytes: [UInt8],
        _ events: [ServerSentEvent],
        lastEventID: String = "",
        reconnectionTime: Duration? = nil
    ) {
        self.name = name
        self.stream = bytes
        self.events = events
        self.lastEventID = lastEventID
        self.reconnectionTime = reconnectionTime
    }
}

private func message(_ data: String, id: String? = nil, retry: Duration? = nil) -> ServerSentEvent {
    ServerSentEvent(data: data, id: id, retry: retry)
}

@Suite("ServerSentEventParser")
struct ServerSentEventParserTests {
    static let cases: [EventStreamCase] = [
        // The standard's own examples.
        EventStreamCase(
            "spec: data lines are joined with LF",
            "data: YHOO\ndata: +2\ndata: 10\n\n",
            [message("YHOO\n+2\n10")]
        ),
        EventStreamCase(
            "spec: comment, id, an id line without a colon resets it, one leading space removed",
            ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
            [message("first event", id: "1"), message("second event"), message(" third event")]
        ),
        EventStreamCase(
            "spec: `data` alone is empty data; an unterminated last event is discarded",
            "data\n\ndata\ndata\n\ndata:",
            [message(""), message("\n")]
        ),
        EventStreamCase(
            "spec: the space after the colon is optional",
            "data:test\n\ndata: test\n\n",
            [message("test"), message("test")]
        ),
        EventStreamCase(
            "spec: event types",
            "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
            [
                ServerSentEvent(type: "add", data: "73857293"), ServerSentEvent(type: "remove", data: "2153"),
                ServerSentEvent(type: "add", data: "113411"),
            ]
        ),
        // Line endings.
        EventStreamCase("CR ends lines", "data: a\rdata: b\r\r", [message("a\nb")]),
        EventStreamCase("CRLF is one line ending", "data: a\r\ndata: b\r\n\r\n", [message("a\nb")]),
        EventStreamCase(
            "LF, CR and CRLF mixed",
            "data: a\ndata: b\r\ndata: c\r\rdata: d\n\r\n",
            [message("a\nb\nc"), message("d")]
        ),
        EventStreamCase("LF CR is two line endings", "data: a\n\rdata: b\n\n", [message("a"), message("b")]),
        EventStreamCase("an empty stream", "", []),
        EventStreamCase("only empty lines", "\n\r\n\r\n\r", []),
        // Byte-order mark and UTF-8.
        EventStreamCase("a leading BOM is removed", bytes: byteOrderMark + bytes("data: a\n\n"), [message("a")]),
        EventStreamCase(
            "only one BOM is removed: a second one is part of the first field's name",
            bytes: byteOrderMark + byteOrderMark + bytes("data: a\n\ndata: b\n\n"),
            [message("b")]
        ),
        EventStreamCase("a BOM after the start is data", "data: \u{FEFF}x\n\n", [message("\u{FEFF}x")]),
        EventStreamCase(
            "UTF-8 text",
            "data: héllo 🌍\nevent: ünï\n\n",
            [ServerSentEvent(type: "ünï", data: "héllo 🌍")]
        ),
        EventStreamCase(
            "invalid UTF-8 becomes U+FFFD",
            bytes: bytes("data: ") + [0xFF, 0x61, 0xE2, 0x82] + bytes("\n\n"),
            [message("\u{FFFD}a\u{FFFD}")]
        ),
        // Comments and fields.
        EventStreamCase("a comment inside an event", "data: a\n: ignore me\n:\ndata: b\n\n", [message("a\nb")]),
        EventStreamCase("a comment alone dispatches nothing", ": keep-alive\n\n", []),
        EventStreamCase("a colon in the value is kept", "data: a: b:c\n\n", [message("a: b:c")]),
        EventStreamCase("no space after the colon", "data:a\n\n", [message("a")]),
        EventStreamCase("only one space is removed", "data:  a\n\n", [message(" a")]),
        EventStreamCase("a tab after the colon is kept", "data:\ta\n\n", [message("\ta")]),
        EventStreamCase("`data: ` is empty data", "data: \n\n", [message("")]),
        EventStreamCase(
            "unknown and differently cased fields are ignored",
            "foo: bar\ndata: a\nDATA: b\nData\nEvent: x\n data: c\n\n",
            [message("a")]
        ),
        EventStreamCase("a block with only unknown fields dispatches nothing", "foo: bar\n\n", []),
        // Event type.
        EventStreamCase("an empty event type is `message`", "event:\ndata: x\n\n", [message("x")]),
        EventStreamCase("`event` without a colon is `message`", "event\ndata: x\n\n", [message("x")]),
        EventStreamCase(
            "the last event field wins",
            "event: a\nevent: b\ndata: x\n\n",
            [ServerSentEvent(type: "b", data: "x")]
        ),
        EventStreamCase(
            "the type resets after each event",
            "event: a\ndata: 1\n\ndata: 2\n\n",
            [ServerSentEvent(type: "a", data: "1"), message("2")]
        ),
        EventStreamCase("the type resets after a block without data", "event: a\n\ndata: 2\n\n", [message("2")]),
        // Last event ID.
        EventStreamCase(
            "the id carries over to later events",
            "id: 1\ndata: a\n\ndata: b\n\n",
            [message("a", id: "1"), message("b", id: "1")],
            lastEventID: "1"
        ),
        EventStreamCase(
            "a block without data still sets the last event ID",
            "id: 7\n\ndata: b\n\n",
            [message("b", id: "7")],
            lastEventID: "7"
        ),
        EventStreamCase(
            "the empty line of a block without data commits its id as the last event ID",
            "data: a\n\nid: 7\n\n",
            [message("a")],
            lastEventID: "7"
        ),
        EventStreamCase(
            "an id containing NUL is ignored",
            "id: 1\ndata: a\n\nid: 2\u{0}x\ndata: b\n\n",
            [message("a", id: "1"), message("b", id: "1")],
            lastEventID: "1"
        ),
        EventStreamCase(
            "an empty id resets the last event ID",
            "id: 1\ndata: a\n\nid:\ndata: b\n\n",
            [message("a", id: "1"), message("b")],
            lastEventID: ""
        ),
        EventStreamCase(
            "the id of an event the stream ends inside is not committed",
            "id: 1\ndata: a\n\nid: 2\ndata: b\n",
            [message("a", id: "1")],
            lastEventID: "1"
        ),
        EventStreamCase(
            "an id may hold spaces and colons",
            "id:  a: b\ndata: x\n\n",
            [message("x", id: " a: b")],
            lastEventID: " a: b"
        ),
        // Retry.
        EventStreamCase(
            "retry sets the event's retry and the reconnection time; the next event has none",
            "retry: 1500\ndata: a\n\ndata: b\n\n",
            [message("a", retry: .milliseconds(1500)), message("b")],
            reconnectionTime: .milliseconds(1500)
        ),
        EventStreamCase(
            "retry values that are not all ASCII digits are ignored",
            "retry: 15a0\ndata: a\n\nretry: -1\ndata: b\n\nretry:\ndata: c\n\nretry:  10\ndata: d\n\n"
                + "retry: 1.5\ndata: e\n\nretry: +3\ndata: f\n\nretry: ١\ndata: g\n\nretry\ndata: h\n\n",
            ["a", "b", "c", "d", "e", "f", "g", "h"].map { message($0) }
        ),
        EventStreamCase(
            "an invalid retry keeps an earlier valid one",
            "retry: 100\nretry: x\ndata: a\n\n",
            [message("a", retry: .milliseconds(100))],
            reconnectionTime: .milliseconds(100)
        ),
        EventStreamCase(
            "retry without data sets the reconnection time",
            "retry: 3000\n\n",
            [],
            reconnectionTime: .seconds(3)
        ),
        EventStreamCase(
            "a terminated retry line counts even when the stream ends inside the event",
            "data: a\nretry: 5\n",
            [],
            reconnectionTime: .milliseconds(5)
        ),
        EventStreamCase("an unterminated retry line does not count", "data: a\n\nretry: 5", [message("a")]),
        EventStreamCase(
            "a retry too large for 64 bits is the longest representable",
            "retry: 99999999999999999999999\ndata: a\n\n",
            [message("a", retry: .milliseconds(Int64.max))],
            reconnectionTime: .milliseconds(Int64.max)
        ),
        EventStreamCase(
            "leading zeros",
            "retry: 007\ndata: a\n\n",
            [message("a", retry: .milliseconds(7))],
            reconnectionTime: .milliseconds(7)
        ),
        // End of stream.
        EventStreamCase("an event without its empty line is discarded", "data: a\n", []),
        EventStreamCase("an unterminated last line is discarded", "data: a", []),
        EventStreamCase("an event ended by one CR at the end of the stream is complete", "data: a\r\r", [message("a")]),
    ]

    @Test("WHATWG rules, whatever the chunks", arguments: cases, Chunking.allCases)
    func whatwgTable(_ row: EventStreamCase, chunking: Chunking) throws {
        let (events, parser) = try parseEvents(row.stream, chunking: chunking)
        #expect(events == row.events)
        #expect(parser.lastEventID == row.lastEventID)
        #expect(parser.reconnectionTime == row.reconnectionTime)
    }

    @Test("a parser for a reconnection carries the last event ID and reconnection time over")
    func resumes() throws {
        let previous = ServerSentEventParser(maximumEventSize: 64, lastEventID: "41", reconnectionTime: .seconds(2))
        let (events, parser) = try parseEvents(bytes("data: a\n\nid: 42\ndata: b\n\n"), parser: previous)
        #expect(events == [message("a", id: "41"), message("b", id: "42")])
        #expect(parser.lastEventID == "42")
        #expect(parser.reconnectionTime == .seconds(2))
    }

    @Test("a line longer than the maximum fails with its line number; one of exactly the maximum passes")
    func lineLimit() throws {
        let parser = ServerSentEventParser(maximumEventSize: 10)
        #expect(try parseEvents(bytes("data: 1234\n\n"), parser: parser).events == [message("1234")])
        for chunking in Chunking.allCases {
            #expect(throws: ServerSentEventParser.Failure.lineTooLong(lineNumber: 3)) {
                try parseEvents(bytes("data: 1\n\ndata: 12345\n\n"), chunking: chunking, parser: parser)
            }
            #expect(throws: ServerSentEventParser.Failure.lineTooLong(lineNumber: 2)) {
                try parseEvents(bytes(":\n: 3456789012"), chunking: chunking, parser: parser)
            }
        }
    }

    @Test("the data of one event, joined with LF, may not exceed the maximum")
    func dataLimit() throws {
        let parser = ServerSentEventParser(maximumEventSize: 10)
        #expect(try parseEvents(bytes("data:12345\ndata:1234\n\n"), parser: parser).events == [message("12345\n1234")])
        for chunking in Chunking.allCases {
            #expect(throws: ServerSentEventParser.Failure.dataTooLarge(lineNumber: 2)) {
                try parseEvents(bytes("data:12345\ndata:12345\n\n"), chunking: chunking, parser: parser)
            }
        }
        // Each event is counted on its own.
        let events = try parseEvents(bytes("data:12345\ndata:1234\n\ndata:12345\ndata:1234\n\n"), parser: parser).events
        #expect(events == [message("12345\n1234"), message("12345\n1234")])
    }

    @Test("comments and other fields do not add to the size of an event")
    func commentsAreNotCounted() throws {
        let parser = ServerSentEventParser(maximumEventSize: 10)
        let stream = String(repeating: ": ping\nfoo: bar\nevent: e\n", count: 100) + "data: x\n\n"
        let events = try parseEvents(bytes(stream), chunking: .random, parser: parser).events
        #expect(events == [ServerSentEvent(type: "e", data: "x")])
    }
}
