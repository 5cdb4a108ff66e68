import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("JSONLineSequence")
struct JSONLineSequenceTests {
    struct Row: Codable, Equatable, Sendable {
        var id: Int
        var name: String
    }

    @Test("one value per line, LF or CRLF, the last line without an ending", arguments: Chunking.allCases)
    func decodes(chunking: Chunking) async throws {
        let body = chunking.chunks(
            bytes("{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":\"b\"}\r\n{\"id\":3,\"name\":\"c\"}")
        )
        let rows = try await JSONLineSequence(body, of: Row.self).elements()
        #expect(rows == [Row(id: 1, name: "a"), Row(id: 2, name: "b"), Row(id: 3, name: "c")])
    }

    @Test("empty lines and lines of spaces, tabs and CRs are skipped", arguments: Chunking.allCases)
    func skipsBlankLines(chunking: Chunking) async throws {
        let body = chunking.chunks(
            bytes("\n  \n{\"id\":1,\"name\":\"a\"}\n\t \r\n\r\r\n\n{\"id\":2,\"name\":\"b\"}\n\n \t")
        )
        let rows = try await JSONLineSequence(body, of: Row.self).elements()
        #expect(rows == [Row(id: 1, name: "a"), Row(id: 2, name: "b")])
    }

    @Test("the base is read only as far as the next value needs")
    func readsLazily() async throws {
        let body = EndlessChunks("1\n\n2\n")
        var iterator = JSONLineSequence(body, of: Int.self).makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        #expect(try await iterator.next() == 2)
        #expect(body.bytesSent == body.chunk.count)
    }

    @Test("the decoder given is used")
    func customDecoder() async throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        struct Snake: Decodable, Equatable { var userName: String }
        let values = try await JSONLineSequence(Chunks("{\"user_name\":\"x\"}\n"), of: Snake.self, decoder: decoder)
            .elements()
        #expect(values == [Snake(userName: "x")])
    }

    @Test("a line that does not decode: decodingFailed naming the line (blank ones counted) and the reason")
    func decodingFailure() async throws {
        let body = Chunks("{\"id\":1,\"name\":\"a\"}\n\n{\"id\":2}\n{\"id\":3,\"name\":\"c\"}\n")
        var iterator = JSONLineSequence(body, of: Row.self).makeAsyncIterator()
        #expect(try await iterator.next() == Row(id: 1, name: "a"))
        let error = try await #require(throws: CourierError.self) { try await iterator.next() }
        #expect(error.code == .decodingFailed)
        #expect(error.message.hasPrefix("line 3 of the JSON Lines stream could not be decoded as Row: "))
        #expect(error.message.contains("\"name\""))
        #expect(error.message.hasSuffix("; the line starts: {\"id\":2}"))
        #expect(error.underlying is DecodingError)
        #expect(try await iterator.next() == nil)
    }

    @Test("the error quotes at most 40 characters of the line, with secrets redacted")
    func shortRedactedExcerpt() async throws {
        let secretValue = "s3cr3t-" + String(repeating: "z", count: 300)
        let line =
            "{\"access_token\":\"\(secretValue)\",\"id\":\"not a number\",\"tail\":\""
            + String(repeating: "q", count: 500)
            + "\"}"
        let error = try await #require(throws: CourierError.self) {
            _ = try await JSONLineSequence(Chunks(line + "\n"), of: Row.self).elements()
        }
        let excerpt = try #require(error.message.components(separatedBy: "; the line starts: ").last)
        #expect(excerpt.count <= 41)
        #expect(excerpt.hasSuffix("…"))
        for text in [error.description, error.debugDescription, String(reflecting: error)] {
            #expect(!text.contains("s3cr3t"))
            #expect(!text.contains("zzzzz"))
            #expect(!text.contains("qqqqq"))
        }
    }

    @Test("a line longer than the maximum is bodyTooLarge; the lines before it are decoded")
    func limit() async throws {
        let body = Chunks(
            "{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":\"\(String(repeating: "b", count: 100))\"}\n",
            chunkSize: 9
        )
        let (rows, error) = await JSONLineSequence(body, of: Row.self, maximumLineLength: 50).collected()
        #expect(rows == [Row(id: 1, name: "a")])
        let courierError = try #require(error as? CourierError)
        #expect(courierError.code == .bodyTooLarge)
        #expect(courierError.message == "line 2 of the JSON Lines stream is longer than the maximum of 50 bytes")
    }

    @Test("the default maximum is 1 MiB")
    func defaultLimit() async throws {
        let limit = 1024 * 1024
        let fits = "\"" + String(repeating: "x", count: limit - 2) + "\"\n"
        #expect(try await JSONLineSequence(Chunks(fits, chunkSize: 65536), of: String.self).elements().count == 1)
        let (_, error) = await JSONLineSequence(Chunks("\"x" + fits, chunkSize: 65536), of: String.self).collected()
        #expect((error as? CourierError)?.code == .bodyTooLarge)
    }

    @Test("a line that never ends fails once the maximum has arrived", .timeLimit(.minutes(1)))
    func endlessLine() async throws {
        let body = EndlessChunks("[1,2,3,4,5,6,7,8,9,")
        let (_, error) = await JSONLineSequence(body, of: [Int].self, maximumLineLength: 1000).collected()
        #expect((error as? CourierError)?.code == .bodyTooLarge)
        #expect(body.bytesSent <= 1000 + 2 * body.chunk.count)
    }

    @Test("cancelling the consuming task cancels the base's read", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let reader = Task { try await JSONLineSequence(SilentBody(), of: Row.self).elements() }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.join() }
    }
}
