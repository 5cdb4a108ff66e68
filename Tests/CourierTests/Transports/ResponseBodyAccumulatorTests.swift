import Foundation
import Testing

@testable import Courier

@Suite("Response body limit")
struct ResponseBodyAccumulatorTests {
    @Test("chunks up to the limit are kept whole")
    func keepsUpToLimit() {
        var body = ResponseBodyAccumulator(limit: 10)
        let accepted1 = body.append(Data("hello".utf8))
        #expect(accepted1)
        let accepted2 = body.append(Data("world".utf8))
        #expect(accepted2)
        #expect(body.data == Data("helloworld".utf8))
        #expect(!body.isOverLimit)
    }

    @Test("the chunk that passes the limit drops everything held, and later chunks are ignored")
    func dropsPastLimit() {
        var body = ResponseBodyAccumulator(limit: 10)
        let accepted3 = body.append(Data("hello".utf8))
        #expect(accepted3)
        let accepted4 = body.append(Data("world!".utf8))
        #expect(!accepted4)
        #expect(body.isOverLimit)
        #expect(body.data.isEmpty)
        let accepted5 = body.append(Data("more".utf8))
        #expect(!accepted5)
        #expect(body.data.isEmpty)
        #expect(body.receivedCount == 11)
    }

    @Test("a zero limit accepts only an empty body")
    func zeroLimit() {
        var body = ResponseBodyAccumulator(limit: 0)
        let accepted6 = body.append(Data())
        #expect(accepted6)
        let accepted7 = body.append(Data([1]))
        #expect(!accepted7)
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
