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
}
