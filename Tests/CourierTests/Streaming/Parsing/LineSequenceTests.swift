import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("LineSequence")
struct LineSequenceTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var stream: [UInt8]
        var lines: [String]
        var testDescription: String { name }

        init(_ name: String, _ stream: String, _ lines: [String]) {
            self.init(name, bytes: Array(stream.utf8), lines)
        }

        init(_ name: String, bytes: [UInt8], _ lines: [String]) {
            self.name = name
            self.stream = bytes
            self.lines = lines
        }
    }

    static let rows: [Row] = [
        Row("LF ends lines", "a\nb\n", ["a", "b"]),
        Row("CRLF ends lines, without its CR", "a\r\nb\r\n", ["a", "b"]),
        Row("a last line without a line ending", "a\nb", ["a", "b"]),
        Row("a CR elsewhere is part of the line", "a\rb\r\rc\n", ["a\rb\r\rc"]),
        Row("empty lines are kept", "\n\na\n\r\n\nb", ["", "", "a", "", "", "b"]),
        Row("an empty body has no lines", "", []),
        Row("a body of one LF has one empty line", "\n", [""]),
        Row("a trailing CR at the end of the body ends the last line", "a\r", ["a"]),
        Row("a leading BOM is removed", bytes: byteOrderMark + bytes("a\nb"), ["a", "b"]),
        Row("a body of only a BOM has no lines", bytes: byteOrderMark, []),
        Row("only one BOM is removed", bytes: byteOrderMark + byteOrderMark + bytes("a"), ["\u{FEFF}a"]),
        Row("UTF-8 text", "héllo 🌍\nünï", ["héllo 🌍", "ünï"]),
        Row("invalid UTF-8 becomes U+FFFD", bytes: [0x61, 0xFF, 0x0A, 0xC3], ["a\u{FFFD}", "\u{FFFD}"]),
    ]

    @Test("line endings, empty lines, BOM and UTF-8, whatever the chunks", arguments: rows, Chunking.allCases)
    func table(_ row: Row, chunking: Chunking) async throws {
        #expect(try await LineSequence(chunking.chunks(row.stream)).elements() == row.lines)
    }

    @Test("a line of exactly the maximum passes, with a CRLF in any chunking; a byte more fails")
    func limit() async throws {
        for chunking in Chunking.allCases {
            let fits = chunking.chunks(bytes("12345\r\n1234\r\n12345"))
            #expect(try await LineSequence(fits, maximumLineLength: 5).elements() == ["12345", "1234", "12345"])
            let fitsAfterBOM = chunking.chunks(byteOrderMark + bytes("12345\r\n"))
            #expect(try await LineSequence(fitsAfterBOM, maximumLineLength: 5).elements() == ["12345"])

            let tooLong: [(stream: String, linesBefore: [String])] = [
                ("123456\n", []), ("1\r\n123456", ["1"]), ("1\n12345\r6\r\n", ["1"]),
            ]
            for (stream, linesBefore) in tooLong {
                let (lines, error) = await LineSequence(chunking.chunks(bytes(stream)), maximumLineLength: 5)
                    .collected()
                #expect((error as? CourierError)?.code == .bodyTooLarge, "\(stream) \(chunking)")
                #expect(lines == linesBefore)
            }
        }
    }

    @Test("the default maximum is 1 MiB")
    func defaultLimit() async throws {
        let limit = 1024 * 1024
        let fits = String(repeating: "x", count: limit) + "\n"
        #expect(try await LineSequence(Chunks(fits, chunkSize: 4096)).elements().map(\.utf8.count) == [limit])
        let (_, error) = await LineSequence(Chunks(fits + "x" + fits, chunkSize: 4096)).collected()
        #expect((error as? CourierError)?.code == .bodyTooLarge)
    }

    @Test("a line that never ends fails once the maximum has arrived, naming the line", .timeLimit(.minutes(1)))
    func endlessLine() async throws {
        let body = EndlessChunks(String(repeating: "x", count: 100))
        let (lines, error) = await LineSequence(body, maximumLineLength: 5000).collected()
        #expect(lines.isEmpty)
        let courierError = try #require(error as? CourierError)
        #expect(courierError.code == .bodyTooLarge)
        #expect(courierError.message == "line 1 of the streamed body is longer than the maximum of 5000 bytes")
        #expect(body.bytesSent <= 5000 + 2 * body.chunk.count)
    }

    @Test("the base is read only as far as the next line needs")
    func readsLazily() async throws {
        let body = EndlessChunks("a\nb\n")
        var iterator = LineSequence(body).makeAsyncIterator()
        #expect(try await iterator.next() == "a")
        #expect(try await iterator.next() == "b")
        #expect(body.bytesSent == body.chunk.count)
    }

    @Test("after an error it ends; the base's error comes through unchanged")
    func endsAfterError() async throws {
        struct Dropped: Error, Equatable {}
        var iterator = LineSequence(FailingChunks(chunks: [Data("a\nb".utf8)], error: Dropped())).makeAsyncIterator()
        #expect(try await iterator.next() == "a")
        await #expect(throws: Dropped()) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test("cancelling the consuming task cancels the base's read", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let reader = Task { try await LineSequence(SilentBody()).elements() }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.join() }
    }
}
