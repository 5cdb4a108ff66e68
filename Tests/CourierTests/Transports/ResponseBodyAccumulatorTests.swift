import Foundation
import Testing

@testable import Courier

@Suite("Response body limit")
struct ResponseBodyAccumulatorTests {
    /// Appends each of `chunks` to `body`; returns whether each was accepted.
    private func append(_ chunks: [String], to body: inout ResponseBodyAccumulator) -> [Bool] {
        chunks.map { body.append(Data($0.utf8)) }
    }

    @Test("chunks up to the limit are kept whole")
    func keepsUpToLimit() {
        var body = ResponseBodyAccumulator(limit: 10)
        #expect(append(["hello", "world"], to: &body) == [true, true])
        #expect(body.data == Data("helloworld".utf8))
        #expect(!body.isOverLimit)
    }

    @Test("the chunk that passes the limit drops everything held, and later chunks are ignored")
    func dropsPastLimit() {
        var body = ResponseBodyAccumulator(limit: 10)
        #expect(append(["hello", "world!"], to: &body) == [true, false])
        #expect(body.isOverLimit)
        #expect(body.data.isEmpty)
        #expect(append(["more"], to: &body) == [false])
        #expect(body.data.isEmpty)
        #expect(body.receivedCount == 11)
    }

    @Test("a zero limit accepts only an empty body")
    func zeroLimit() {
        var body = ResponseBodyAccumulator(limit: 0)
        #expect(append(["", "x"], to: &body) == [true, false])
    }

    @Test(
        "an announced length is refused only when a body of that length will follow",
        arguments: [
            ("GET", 200, Int64(11), true),
            ("GET", 200, Int64(10), false),
            ("GET", 200, Int64(-1), false),
            ("HEAD", 200, Int64(11), false),
            ("head", 200, Int64(11), false),
            ("GET", 304, Int64(11), false),
            ("GET", 204, Int64(11), false),
            ("POST", 500, Int64(11), true),
        ]
    )
    func announcedLength(method: String, status: Int, length: Int64, refused: Bool) {
        #expect(
            ResponseBodyAccumulator.announcedLengthExceeds(
                10,
                expectedContentLength: length,
                method: method,
                status: status
            ) == refused
        )
    }
}
