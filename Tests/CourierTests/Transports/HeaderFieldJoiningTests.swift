import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The conversion of a server's fields into the dictionary `HTTPURLResponse` and `URLRequest` keep, which
/// AsyncHTTPClient's transport and the http-types bridge share (and the `header-fields` fuzz target runs).
@Suite("Header fields joined for HTTPURLResponse and URLRequest")
struct HeaderFieldJoiningTests {
    @Test("repeated names join under their first spelling, in order; a request's Cookie with a semicolon")
    func joining() {
        let fields: [(name: String, value: String)] = [
            ("Set-Cookie", "a=1"), ("Vary", "Accept"), ("set-cookie", "b=2"), ("COOKIE", "x=1"), ("cookie", "y=2"),
            ("X-A^B", "1"), ("X-A~B", "2"), ("vary", ""),
        ]
        #expect(
            HeaderFieldJoining.joined(fields, count: fields.count, style: .response) == [
                "Set-Cookie": "a=1, b=2", "Vary": "Accept, ", "COOKIE": "x=1, y=2", "X-A^B": "1", "X-A~B": "2",
            ]
        )
        #expect(
            HeaderFieldJoining.joined(fields, count: 0, style: .request) == [
                "Set-Cookie": "a=1, b=2", "Vary": "Accept, ", "COOKIE": "x=1; y=2", "X-A^B": "1", "X-A~B": "2",
            ]
        )
    }

    @Test(
        "a response's fields are refused for a control character in a name or value, or both framings",
        arguments: [
            (
                [("X-Token", "abc\rSet-Cookie: evil=1")],
                "value of response header \"X-Token\" contains a control character (\\r)"
            ),
            ([("X-A\u{0}B", "1")], "name of a response header contains a control character (\\u{0})"),
            ([("X-Del", "a\u{7F}")], "value of response header \"X-Del\" contains a control character (\\u{7F})"),
            ([("Transfer-Encoding", "chunked"), ("content-length", "3")], "both Transfer-Encoding and Content-Length"),
        ]
    )
    func refusals(fields: [(String, String)], message: String) throws {
        let pairs = fields.map { (name: $0.0, value: $0.1) }
        let error = try #require(throws: CourierError.self) {
            try HeaderFieldJoining.responseFields(pairs, count: pairs.count, for: nil)
        }
        #expect(error.code == .nonHTTPResponse)
        #expect(error.message.contains(message), "\(error.message)")
    }

    @Test("a tab inside a value, and more fields up to the limit, are accepted")
    func accepted() throws {
        let fields = [(name: "X-Tab", value: "a\tb")] + (1..<5).map { (name: "X-\($0)", value: "v") }
        let converted = try HeaderFieldJoining.responseFields(fields, count: 5, for: nil, maximumFieldCount: 5)
        #expect(converted["X-Tab"] == "a\tb")
        #expect(converted.count == 5)
        #expect(throws: CourierError.self) {
            try HeaderFieldJoining.responseFields(fields, count: 5, for: nil, maximumFieldCount: 4)
        }
    }

    /// Names of fields a head may have: distinct ones, spellings of the same name, one of another length that is
    /// not ASCII, and one that lowercases to an ASCII name (the Kelvin sign).
    private static let names = [
        "Content-Type", "content-type", "CONTENT-TYPE", "Date", "date", "ETag", "Vary", "vary", "Set-Cookie",
        "set-cookie", "Cookie", "X-Request-ID", "X-Rate-Limit", "Cache-Control", "Server", "É", "é", "X-\u{212A}",
        "X-k", "X-K", "",
    ]

    @Test("fields without a name twice go straight into the dictionary, as the general path makes it", arguments: 0..<4)
    func distinctFieldsAgree(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 3)
        var distinct = 0
        for round in 0..<500 {
            // Now and then more fields than the fast path takes.
            let count =
                round % 50 == 0
                ? HeaderFieldJoining.distinctFieldLimit + Int(random.next() % 3) : Int(random.next() % 9)
            let fields = (0..<count).map { index in
                let name =
                    random.next() % 3 == 0
                    ? "X-\(index)-\(random.next() % 1_000)" : Self.names[Int(random.next() % UInt64(Self.names.count))]
                return (name: name, value: "v\(random.next() % 4)")
            }
            for style in [HeaderFieldJoining.Style.response, .request] {
                let general = HeaderFieldJoining.joinedByName(fields, count: fields.count, style: style)
                #expect(HeaderFieldJoining.joined(fields, count: fields.count, style: style) == general, "\(fields)")
                if let fast = HeaderFieldJoining.distinctFields(fields, count: fields.count) {
                    distinct += 1
                    #expect(fast == general, "\(fields)")
                    #expect(fast.count == fields.count)
                } else {
                    #expect(general.count < fields.count || fields.count > HeaderFieldJoining.distinctFieldLimit)
                }
            }
        }
        // Both paths were taken many times.
        #expect(distinct > 200)
        #expect(distinct < 900)
    }
}
