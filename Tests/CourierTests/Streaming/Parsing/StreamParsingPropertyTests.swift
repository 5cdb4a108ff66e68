import CourierTesting
import Foundation
import Testing

@testable import Courier

/// Seeded random streams, cut into chunks at random places: the parsers give exactly what a reference model
/// gives for the whole stream. The references work on a decoded `String`, one Unicode scalar at a time,
/// the way the standards describe the formats.
@Suite("Stream parsing properties")
struct StreamParsingPropertyTests {
    static let seeds: [UInt64] = Array(0..<400)

    // MARK: - Server-Sent Events

    @Test("random event streams: events and state match the reference, whatever the chunks")
    func serverSentEvents() async throws {
        for seed in Self.seeds {
            var random = SplitMix64(seed: seed)
            let stream = RandomStreams.eventStream(using: &random)
            let expected = ReferenceEventStream(stream)
            for chunking in Chunking.allCases {
                let body = chunking.chunks(stream, seed: seed)
                var iterator = ServerSentEventSequence(body).makeAsyncIterator()
                var events: [ServerSentEvent] = []
                while let event = try await iterator.next() { events.append(event) }
                let context = Comment(rawValue: "seed \(seed), \(chunking.testDescription): \(stream)")
                #expect(events == expected.events, context)
                let state = try #require(iterator.eventParser)
                #expect(state.lastEventID == expected.lastEventID, context)
                #expect(state.reconnectionTime == expected.reconnectionTime, context)
            }
        }
    }

    @Test("the generator makes the streams the property needs")
    func eventStreamsCoverTheRules() {
        var streams: [[UInt8]] = []
        for seed in Self.seeds {
            var random = SplitMix64(seed: seed)
            streams.append(RandomStreams.eventStream(using: &random))
        }
        let references = streams.map(ReferenceEventStream.init)
        #expect(streams.filter { $0.starts(with: byteOrderMark) }.count > 20)
        #expect(streams.filter { $0.contains(0x0D) }.count > 100)
        #expect(references.filter { $0.events.contains { $0.data.contains("\n") } }.count > 20)
        #expect(references.filter { $0.events.contains { $0.type != "message" } }.count > 20)
        #expect(references.filter { $0.events.contains { $0.retry != nil } }.count > 20)
        #expect(references.filter { !$0.lastEventID.isEmpty }.count > 20)
        #expect(references.map(\.events.count).reduce(0, +) > 500)
    }

    // MARK: - Lines

    @Test("random text: lines match the reference, whatever the chunks")
    func lines() async throws {
        for seed in Self.seeds {
            var random = SplitMix64(seed: seed)
            let stream = RandomStreams.text(using: &random)
            let expected = ReferenceLines.lines(stream)
            for chunking in Chunking.allCases {
                let lines = try await LineSequence(chunking.chunks(stream, seed: seed)).elements()
                #expect(lines == expected, "seed \(seed), \(chunking.testDescription): \(stream)")
            }
        }
    }

    // MARK: - JSON Lines

    struct Record: Codable, Equatable {
        var id: Int
        var name: String
        var tags: [String]
    }

    @Test("random JSON Lines: values match the reference, whatever the chunks")
    func jsonLines() async throws {
        let encoder = JSONEncoder()
        for seed in Self.seeds {
            var random = SplitMix64(seed: seed)
            let stream = try RandomStreams.jsonLines(using: &random, encoder: encoder)
            let expected = try ReferenceLines.lines(stream)
                .filter { !$0.unicodeScalars.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" } }
                .map { try JSONDecoder().decode(Record.self, from: Data($0.utf8)) }
            for chunking in Chunking.allCases {
                let records = try await JSONLineSequence(chunking.chunks(stream, seed: seed), of: Record.self)
                    .elements()
                #expect(records == expected, "seed \(seed), \(chunking.testDescription)")
            }
        }
    }
}

// MARK: - Generators

enum RandomStreams {
    /// Pieces of field values: ASCII, colons and spaces, multi-byte UTF-8, a BOM, invalid UTF-8, NUL.
    static let valuePieces: [[UInt8]] = [
        [0x61], [0x62], [0x7A], [0x31], [0x20], [0x20], [0x3A], [0x09], Array("é".utf8), Array("🌍".utf8),
        byteOrderMark, [0xFF], [0xC3], [0xE2, 0x82], [0x00],
    ]
    static let lineEndings: [[UInt8]] = [[0x0A], [0x0D], [0x0D, 0x0A]]

    static func value(using random: inout SplitMix64, maximumLength: Int = 8) -> [UInt8] {
        (0..<Int.random(in: 0...maximumLength, using: &random))
            .flatMap { _ in valuePieces.randomElement(using: &random)! }
    }

    static func eventStream(using random: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = Bool.random(using: &random) && Bool.random(using: &random) ? byteOrderMark : []
        let separators: [String] = [":", ": ", ":  "]
        for _ in 0..<Int.random(in: 0...40, using: &random) {
            let separator = Array(separators.randomElement(using: &random)!.utf8)
            let line: [UInt8]
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<5: line = []
            case 5..<10: line = Array("data".utf8) + separator + value(using: &random)
            case 10: line = Array("data".utf8)
            case 11: line = Array("event".utf8) + separator + value(using: &random, maximumLength: 3)
            case 12: line = Array("id".utf8) + separator + value(using: &random, maximumLength: 3)
            case 13: line = Array(["id", "event", "retry"].randomElement(using: &random)!.utf8)
            case 14, 15:
                let digits = (0..<Int.random(in: 0...4, using: &random)).map { _ in
                    UInt8.random(in: 0x30...0x39, using: &random)
                }
                let junk = Int.random(in: 0..<3, using: &random) == 0 ? value(using: &random, maximumLength: 1) : []
                line = Array("retry".utf8) + separator + digits + junk
            case 16: line = [0x3A] + value(using: &random)
            case 17:
                line =
                    Array(["foo", "Data", " data", "dat"].randomElement(using: &random)!.utf8) + separator
                    + value(using: &random)
            default: line = value(using: &random)
            }
            stream += line + lineEndings.randomElement(using: &random)!
        }
        if Int.random(in: 0..<4, using: &random) == 0 {
            stream += Array("data".utf8) + value(using: &random)  // an unterminated last line
        }
        return stream
    }

    /// Lines of random text (lone CRs included) ended by LF or CRLF, maybe with a BOM and an unterminated end.
    static func text(using random: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = Int.random(in: 0..<5, using: &random) == 0 ? byteOrderMark : []
        for _ in 0..<Int.random(in: 0...30, using: &random) {
            var line = value(using: &random, maximumLength: 10)
            if Int.random(in: 0..<5, using: &random) == 0 {
                line.insert(0x0D, at: Int.random(in: 0...line.count, using: &random))
            }
            stream += line + (Bool.random(using: &random) ? [0x0A] : [0x0D, 0x0A])
        }
        if Bool.random(using: &random) { stream += value(using: &random) }
        if Int.random(in: 0..<8, using: &random) == 0 { stream += [0x0D] }
        return stream
    }

    static func jsonLines(using random: inout SplitMix64, encoder: JSONEncoder) throws -> [UInt8] {
        var stream: [UInt8] = Int.random(in: 0..<5, using: &random) == 0 ? byteOrderMark : []
        let blanks: [[UInt8]] = [[], [0x20], [0x09, 0x20], [0x0D]]
        let count = Int.random(in: 0...20, using: &random)
        for index in 0..<count {
            if Int.random(in: 0..<3, using: &random) == 0 {
                stream += blanks.randomElement(using: &random)! + [0x0A]
            }
            let record = StreamParsingPropertyTests.Record(
                id: Int.random(in: -1000...1000, using: &random),
                name: String(decoding: value(using: &random).filter { $0 != 0xFF && $0 != 0xC3 }, as: UTF8.self)
                    + "\n\r\"",
                tags: (0..<Int.random(in: 0...3, using: &random)).map { "t\($0)" }
            )
            stream += Array(try encoder.encode(record))
            let isLast = index == count - 1
            if !isLast || Bool.random(using: &random) {
                stream += Bool.random(using: &random) ? [0x0A] : [0x0D, 0x0A]
            }
        }
        return stream
    }
}

// MARK: - Reference models

/// The event-stream rules applied naively: decode the whole stream, split it into lines, interpret each.
struct ReferenceEventStream {
    var events: [ServerSentEvent] = []
    var lastEventID = ""
    var reconnectionTime: Duration?

    init(_ stream: [UInt8]) {
        var scalars = Array(String(decoding: stream, as: UTF8.self).unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var lines: [[Unicode.Scalar]] = []
        var current: [Unicode.Scalar] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\r" || scalar == "\n" {
                lines.append(current)
                current = []
                if scalar == "\r", index + 1 < scalars.count, scalars[index + 1] == "\n" { index += 1 }
            } else {
                current.append(scalar)
            }
            index += 1
        }
        // `current` is an unterminated last line: discarded.

        var data: [Unicode.Scalar] = []
        var hasData = false
        var eventType: [Unicode.Scalar] = []
        var idBuffer: [Unicode.Scalar] = []
        var retry: Duration?
        for line in lines {
            if line.isEmpty {
                lastEventID = Self.string(idBuffer)
                if hasData {
                    events.append(
                        ServerSentEvent(
                            type: eventType.isEmpty ? "message" : Self.string(eventType),
                            data: Self.string(data.dropLast()),
                            id: lastEventID.isEmpty ? nil : lastEventID,
                            retry: retry
                        )
                    )
                }
                data = []
                hasData = false
                eventType = []
                retry = nil
                continue
            }
            if line[0] == ":" { continue }
            var name = line[...]
            var value: ArraySlice<Unicode.Scalar> = []
            if let colon = line.firstIndex(of: ":") {
                name = line[..<colon]
                value = line[(colon + 1)...]
                if value.first == " " { value = value.dropFirst() }
            }
            switch Self.string(name) {
            case "data":
                data += value + ["\n"]
                hasData = true
            case "event":
                eventType = Array(value)
            case "id" where !value.contains("\u{0}"):
                idBuffer = Array(value)
            case "retry" where !value.isEmpty && value.allSatisfy({ ("0"..."9").contains($0) }):
                let milliseconds = value.reduce(Int64(0)) { total, digit in
                    let (times10, overflow1) = total.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit.value - 0x30))
                    return overflow1 || overflow2 ? .max : sum
                }
                retry = .milliseconds(milliseconds)
                reconnectionTime = retry
            default:
                break
            }
        }
    }

    private static func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var string = ""
        string.unicodeScalars.append(contentsOf: scalars)
        return string
    }
}

/// Lines split naively: decode the whole stream, split at LF, remove one trailing CR of each line.
enum ReferenceLines {
    static func lines(_ stream: [UInt8]) -> [String] {
        var text = String(decoding: stream, as: UTF8.self)
        if text.unicodeScalars.first == "\u{FEFF}" { text.unicodeScalars.removeFirst() }
        var pieces = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        if pieces.last?.isEmpty == true { pieces.removeLast() }  // the body ended with a line ending
        return pieces.map { piece in
            var line = String(piece)
            if line.unicodeScalars.last == "\r" { line.unicodeScalars.removeLast() }
            return line
        }
    }
}
