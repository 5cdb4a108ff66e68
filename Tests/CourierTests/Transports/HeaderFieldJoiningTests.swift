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
                #expect(general == Self.joinedByDefinition(fields, style: style), "\(fields)")
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

    @Test(
        "names equal as Strings (the Kelvin sign and K) are one name with those the same without case: every value kept, in order"
    )
    func canonicallyEquivalentNames() throws {
        let kelvin = "X-\u{212A}"
        // `x-k` is the same as `X-K` without case, and `X-K` equal to the Kelvin sign's name as a `String`: the
        // third field links the first two.
        let fields = [(name: kelvin, value: "1"), (name: "x-k", value: "2"), (name: "X-K", value: "3"), (kelvin, "4")]
        let expected = [kelvin: "1, 2, 3, 4"]
        for style in [HeaderFieldJoining.Style.response, .request] {
            #expect(HeaderFieldJoining.joined(fields, count: fields.count, style: style) == expected)
            #expect(HeaderFieldJoining.joinedByName(fields, count: 0, style: style) == expected)
        }
        #expect(try HeaderFieldJoining.responseFields(fields, count: fields.count, for: nil) == expected)
        // A request's `Cookie`, and a name equal as a `String` (the Kelvin sign) to one the same as it without case.
        let cookies = [
            (name: "Cookie", value: "a=1"), (name: "Coo\u{212A}ie", value: "b=2"), (name: "CooKie", value: "c=3"),
        ]
        #expect(HeaderFieldJoining.joined(cookies, count: 3, style: .request) == ["Cookie": "a=1; b=2; c=3"])
        #expect(HeaderFieldJoining.joined(cookies.prefix(2), count: 2, style: .request).count == 2)
        let spelledTwice = [
            (name: "E\u{301}", value: "1"), (name: "\u{C9}", value: "2"), (name: "e\u{301}", value: "3"),
        ]
        #expect(HeaderFieldJoining.joined(spelledTwice, count: 3, style: .response) == ["E\u{301}": "1, 2, 3"])
    }

    /// The joining by its definition, sharing nothing with the code: groups of fields, each new field merging every
    /// group with a name the same as its own (without the case of ASCII letters, or as `String`s) into one, joined
    /// under its first field's spelling in the fields' order; a request's `Cookie` with `"; "`.
    private static func joinedByDefinition(
        _ fields: [(name: String, value: String)],
        style: HeaderFieldJoining.Style
    ) -> [String: String] {
        func folded(_ name: String) -> [UInt8] { name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } }
        func same(_ first: String, _ second: String) -> Bool { first == second || folded(first) == folded(second) }
        var groups: [[Int]] = []
        for (index, field) in fields.enumerated() {
            let matching = groups.indices.filter { group in groups[group].contains { same(fields[$0].name, field.name) }
            }
            let merged = (matching.flatMap { groups[$0] } + [index]).sorted()
            groups = groups.indices.filter { !matching.contains($0) }.map { groups[$0] } + [merged]
        }
        var result: [String: String] = [:]
        for group in groups {
            let name = fields[group[0]].name
            let separator = style == .request && folded(name) == Array("cookie".utf8) ? "; " : ", "
            #expect(result[name] == nil, "two groups under one key: \(name)")
            result[name] = group.map { fields[$0].value }.joined(separator: separator)
        }
        return result
    }

    /// Scalars a hostile field may be made of: letters, the bytes the check refuses (each control character, DEL),
    /// the tab it allows, and scalars of two, three and four UTF-8 bytes (the Kelvin sign lowercases to `k`).
    private static let hostileScalars: [Unicode.Scalar] =
        ["a", "Z", "-", " ", ":", "~", "\t", "\u{7F}", "é", "\u{212A}", "€", "🙂"]
        + (0..<0x20).compactMap { Unicode.Scalar($0) }

    /// A string of `length` scalars, mostly letters, with a scalar from ``hostileScalars`` now and then.
    private static func hostileString(length: Int, random: inout SplitMix64) -> String {
        var string = ""
        for _ in 0..<length {
            if random.next() % 6 == 0 {
                string.unicodeScalars.append(hostileScalars[Int(random.next() % UInt64(hostileScalars.count))])
            } else {
                string.unicodeScalars.append(Unicode.Scalar(UInt8(0x61 + random.next() % 26)))
            }
        }
        return string
    }

    /// The checks as they were before they moved into the conversion's pass over the fields: every name and value
    /// checked a byte at a time, in order, then the framing, then the fields joined.
    private static func checkedThenJoined(
        _ fields: [(name: String, value: String)],
        maximumFieldCount: Int
    ) -> Result<[String: String], CourierError> {
        guard fields.count <= maximumFieldCount else {
            return .failure(ResponseHeadCheck.tooManyFields(fields.count, request: nil))
        }
        var framing = (transferEncoding: false, contentLength: false)
        for (name, value) in fields {
            if let control = ResponseHeadCheck.forbiddenControl(in: name) {
                return .failure(ResponseHeadCheck.invalidName(control: control, request: nil))
            }
            if let control = ResponseHeadCheck.forbiddenControl(in: value) {
                return .failure(ResponseHeadCheck.invalidValue(name: name, control: control, request: nil))
            }
            if name.utf8.count == 17, name.caseInsensitiveEquals("Transfer-Encoding") {
                framing.transferEncoding = true
            } else if name.utf8.count == 14, name.caseInsensitiveEquals("Content-Length") {
                framing.contentLength = true
            }
        }
        if framing.transferEncoding && framing.contentLength {
            return .failure(ResponseHeadCheck.conflictingFraming(request: nil))
        }
        return .success(HeaderFieldJoining.joined(fields, count: fields.count, style: .response))
    }

    @Test(
        "the checked conversion accepts and refuses hostile fields as the checks before it did, with the same error",
        arguments: 0..<4
    )
    func checkedConversionAgrees(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 4)
        let framingNames = [
            "Transfer-Encoding", "transfer-encoding", "Content-Length", "CONTENT-LENGTH", "Content-Lengt\u{0}",
        ]
        var outcomes = (accepted: 0, invalidName: 0, invalidValue: 0, framing: 0, tooMany: 0)
        for round in 0..<1_500 {
            let count =
                round % 40 == 0
                ? HeaderFieldJoining.distinctFieldLimit + Int(random.next() % 3) : Int(random.next() % 13)
            // Mostly clean fields (so that a refusal comes at any field, or none), of every length around a word.
            let hostility = random.next() % 4
            let fields = (0..<count).map { _ in
                let name: String
                switch random.next() % 8 {
                case 0: name = framingNames[Int(random.next() % UInt64(framingNames.count))]
                case 1: name = Self.names[Int(random.next() % UInt64(Self.names.count))]
                case 2 where hostility == 0: name = Self.hostileString(length: Int(random.next() % 20), random: &random)
                default: name = "X-\(random.next() % 200)"
                }
                let value: String
                if hostility == 0 || random.next() % 8 == 0 {
                    value = Self.hostileString(length: Int(random.next() % 40), random: &random)
                } else {
                    value = String(repeating: "v", count: Int(random.next() % 30))
                }
                return (name: name, value: value)
            }
            let maximumFieldCount = random.next() % 5 == 0 ? 8 : ResponseHeadCheck.maximumFieldCount
            let fused = Result {
                try HeaderFieldJoining.responseFields(
                    fields,
                    count: fields.count,
                    for: nil,
                    maximumFieldCount: maximumFieldCount
                )
            }
            switch (fused, Self.checkedThenJoined(fields, maximumFieldCount: maximumFieldCount)) {
            case (.success(let converted), .success(let expected)):
                #expect(converted == expected, "\(fields)")
                outcomes.accepted += 1
            case (.failure(let error as CourierError), .failure(let expected)):
                #expect(error.code == expected.code, "\(fields)")
                #expect(error.message == expected.message, "\(fields)")
                if expected.message.contains("name of a response header") {
                    outcomes.invalidName += 1
                } else if expected.message.contains("value of response header") {
                    outcomes.invalidValue += 1
                } else if expected.message.contains("both Transfer-Encoding") {
                    outcomes.framing += 1
                } else {
                    outcomes.tooMany += 1
                }
            case (let fused, let expected):
                Issue.record("the conversion gave \(fused), the checks \(expected), for \(fields)")
            }
        }
        // Every outcome was reached many times.
        #expect(outcomes.accepted > 300, "\(outcomes)")
        #expect(outcomes.invalidName > 30, "\(outcomes)")
        #expect(outcomes.invalidValue > 100, "\(outcomes)")
        #expect(outcomes.framing > 10, "\(outcomes)")
        #expect(outcomes.tooMany > 30, "\(outcomes)")
    }

    @Test("the check eight bytes at a time finds the byte the check a byte at a time finds, at every place")
    func wordCheckAgrees() {
        var random = SplitMix64.derived(seed: 0, 29, 5)
        let reference: ([UInt8]) -> UInt8? = { bytes in
            bytes.first { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
        }
        var found = 0
        var mismatches: [[UInt8]] = []
        for length in 0...33 {
            for position in 0..<max(length, 1) {
                for byte in UInt8.min...UInt8.max {
                    // Clean bytes around it, but now and then a tab or a byte that is not ASCII, before or after.
                    var bytes = (0..<length).map { _ in
                        switch random.next() % 16 {
                        case 0: UInt8(0x09)
                        case 1: UInt8(0x80 + random.next() % 0x80)
                        default: UInt8(0x20 + random.next() % 0x5F)
                        }
                    }
                    if length > 0 { bytes[position] = byte }
                    let expected = reference(bytes)
                    let byWords = bytes.withUnsafeBufferPointer { ResponseHeadCheck.forbiddenControl(in: $0) }
                    if byWords != expected { mismatches.append(bytes) }
                    if expected != nil { found += 1 }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(found > 10_000)
        // And for strings, which the conversion passes.
        for string in ["", "a\tb", "0123456\u{7F}", "01234567\r\n", "é\u{1}", "X-\u{212A}", "caf\u{E9} au lait\u{0}"] {
            #expect(
                ResponseHeadCheck.forbiddenControlByWords(in: string) == ResponseHeadCheck.forbiddenControl(in: string)
            )
        }
    }
}
