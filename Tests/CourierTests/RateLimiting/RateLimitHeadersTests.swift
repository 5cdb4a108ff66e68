import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("RateLimitHeaders")
struct RateLimitHeadersTests {
    /// 2026-01-01T00:00:00Z.
    private let now = Date(timeIntervalSince1970: 1_767_225_600)

    private func observe(_ fields: [String: String], status: Int = 200) -> RateLimitObservation {
        RateLimitHeaders.observe(status: status, now: now) { name in
            fields.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    @Test("the IETF fields: remaining and reset from RateLimit, quota and window from the named policy")
    func ietf() {
        let observation = observe([
            "RateLimit": #""default";r=50;t=30"#,
            "RateLimit-Policy": #""burst";q=10;w=1, "default";q=100;w=60"#,
        ])
        #expect(observation.remaining == 50)
        #expect(observation.reset == .seconds(30))
        #expect(observation.limit == 100)
        #expect(observation.window == .seconds(60))
        #expect(!observation.isThrottled)
    }

    @Test("with several IETF policies, the one with the least remaining applies")
    func mostRestrictive() {
        let observation = observe([
            "RateLimit": #""day";r=900;t=40000, "minute";r=3;t=12"#,
            "RateLimit-Policy": #""day";q=1000;w=86400, "minute";q=60;w=60"#,
        ])
        #expect(observation.remaining == 3)
        #expect(observation.reset == .seconds(12))
        #expect(observation.limit == 60)
        #expect(observation.window == .seconds(60))
    }

    @Test("quoted policy names may contain commas and semicolons; tokens work as names too")
    func quotedNames() {
        let quoted = observe(["RateLimit": #""a,b;c";r=7;t=3"#, "RateLimit-Policy": #""a,b;c";q=9;w=5"#])
        #expect(quoted.remaining == 7)
        #expect(quoted.limit == 9)
        let token = observe(["RateLimit": "default;r=4;t=2", "RateLimit-Policy": "default;q=8;w=10"])
        #expect(token.remaining == 4)
        #expect(token.limit == 8)
    }

    @Test("the earlier drafts: the RateLimit dictionary, and separate RateLimit-Limit/-Remaining/-Reset")
    func earlierDrafts() {
        let dictionary = observe(["RateLimit": "limit=100, remaining=50, reset=30", "RateLimit-Policy": "100;w=60"])
        #expect(dictionary.limit == 100)
        #expect(dictionary.remaining == 50)
        #expect(dictionary.reset == .seconds(30))
        #expect(dictionary.window == .seconds(60))
        let separate = observe([
            "RateLimit-Limit": "100", "RateLimit-Remaining": "5", "RateLimit-Reset": "7",
            "RateLimit-Policy": "100;w=60",
        ])
        #expect(separate.limit == 100)
        #expect(separate.remaining == 5)
        #expect(separate.reset == .seconds(7))
        #expect(separate.window == .seconds(60))
    }

    @Test("X-RateLimit-*: a reset as delta seconds")
    func xDelta() {
        let observation = observe(["X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "42"])
        #expect(observation.limit == 60)
        #expect(observation.remaining == 0)
        #expect(observation.reset == .seconds(42))
    }

    @Test("X-RateLimit-Reset as an epoch time: more than half the current epoch time")
    func xEpoch() {
        let future = observe(["X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "1767225690"])
        #expect(future.reset == .seconds(90))
        let past = observe(["X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "1767225000"])
        #expect(past.reset == .zero)
        // A year of delta seconds is still a delta.
        let long = observe(["X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "31536000"])
        #expect(long.reset == .seconds(31_536_000))
    }

    @Test("X-RateLimit-Reset as an epoch time in milliseconds, as some APIs send it, is that time, not 34,800 years")
    func xEpochMilliseconds() {
        let future = observe(["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225690000"])
        #expect(future.reset == .seconds(90))
        let fractional = observe(["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225600500"])
        #expect(fractional.reset == .milliseconds(500))
        let past = observe(["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225000000"])
        #expect(past.reset == .zero)
        // Beyond any plausible millisecond epoch, still "for ever": the largest delta.
        let huge = observe(["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1e21"])
        #expect(huge.reset == .seconds(NetworkNumber.maximumSeconds))
    }

    @Test("a limit field in the older list form reads its first number")
    func listLimit() {
        let observation = observe(["X-RateLimit-Limit": "100, 100;w=60", "X-RateLimit-Remaining": "9"])
        #expect(observation.limit == 100)
        #expect(observation.remaining == 9)
    }

    @Test("429 and 503 are throttled and carry Retry-After (seconds or an HTTP-date); other statuses ignore it")
    func retryAfter() {
        let seconds = observe(["Retry-After": "120"], status: 429)
        #expect(seconds.isThrottled)
        #expect(seconds.retryAfter == .seconds(120))
        let date = observe(["Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"], status: 503)
        #expect(date.isThrottled)
        #expect(date.retryAfter == .seconds(30))
        let ok = observe(["Retry-After": "120"], status: 200)
        #expect(!ok.isThrottled)
        #expect(ok.retryAfter == nil)
        #expect(ok.isEmpty)
    }

    @Test("the IETF fields win over the X- fields when both are sent")
    func precedence() {
        let observation = observe([
            "RateLimit": #""default";r=5;t=10"#,
            "X-RateLimit-Remaining": "99",
            "X-RateLimit-Reset": "1",
        ])
        #expect(observation.remaining == 5)
        #expect(observation.reset == .seconds(10))
    }

    @Test("malformed values are ignored rather than misread")
    func malformed() {
        let observation = observe(["X-RateLimit-Remaining": "-3", "X-RateLimit-Reset": "soon", "X-RateLimit-Limit": ""])
        #expect(observation.isEmpty)
        let ietf = observe(["RateLimit": #""default";t=5"#])
        #expect(ietf.remaining == nil)
    }

    @Test(
        "a reset or window beyond what a Duration holds (1e21 s) is the longest one, not a trap",
        arguments: [
            ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1e21"],
            ["RateLimit-Remaining": "0", "RateLimit-Reset": "1e21", "RateLimit-Policy": "10;w=1e21"],
            ["RateLimit": "limit=10, remaining=0, reset=1e21", "RateLimit-Policy": "10;w=1e21"],
            ["RateLimit": #""default";r=0;t=1e21"#, "RateLimit-Policy": #""default";q=10;w=1e21"#],
        ]
    )
    func hugeReset(fields: [String: String]) {
        let observation = observe(fields)
        #expect(observation.remaining == 0)
        #expect(observation.reset == .seconds(NetworkNumber.maximumSeconds))
        if fields["RateLimit-Policy"] != nil { #expect(observation.window == .seconds(NetworkNumber.maximumSeconds)) }
    }

    @Test("counts too long for an Int are clamped rather than dropped or trapped")
    func hugeCounts() {
        let observation = observe([
            "X-RateLimit-Limit": String(repeating: "9", count: 400), "X-RateLimit-Remaining": "18446744073709551616",
        ])
        #expect(observation.limit == NetworkNumber.int(NetworkNumber.maximumCount))
        #expect(observation.remaining == NetworkNumber.int(NetworkNumber.maximumCount))
    }

    @Test(
        "a response is read as a case-insensitive lookup of each field reads it, in any spelling",
        arguments: [
            (200, ["x-ratelimit-limit": "100", "X-RATELIMIT-REMAINING": "7", "x-RateLimit-Reset": "30"]),
            (
                200,
                [
                    "ratelimit-limit": "10", "RATELIMIT-REMAINING": "3", "ratelimit-reset": "5",
                    "ratelimit-policy": "10;w=60",
                ]
            ),
            (200, ["ratelimit": #""default";r=50;t=30"#, "RATELIMIT-POLICY": #""default";q=100;w=60"#]),
            (429, ["retry-after": "12", "Content-Type": "application/json"]),
            (200, ["Content-Type": "application/json"]),
        ]
    )
    func fromResponse(status: Int, fields: [String: String]) throws {
        let url = try #require(URL(string: "https://api.example.com/"))
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
        )
        let expected = observe(fields, status: status)
        #expect(RateLimitHeaders.observe(response, currentDate: { now }) == expected)
        #expect(expected != RateLimitObservation() || fields.count == 1)
    }

    @Test("the one-pass reading of a response keeps every field the reader asks for")
    func fieldNamesCoverEveryLookup() {
        var asked = Set<String>()
        for (status, value) in [(200, "1"), (429, "1"), (200, #""a";r=1;t=1"#), (200, "limit=1")] {
            for shape in ["RateLimit", "RateLimit-Remaining", "X-RateLimit-Remaining"] {
                _ = RateLimitHeaders.observe(status: status, now: now) { name in
                    asked.insert(name.lowercased())
                    return name == shape ? value : nil
                }
            }
        }
        #expect(asked.count == 9)
        #expect(asked == Set(RateLimitHeaders.fieldNames.map { $0.lowercased() }))
    }

    /// For each field name, the fields that make it count: the name alone, or with the field it qualifies.
    private static let shapes: [String: (status: Int, value: String, with: [String: String])] = [
        "RateLimit": (200, #""default";r=5;t=10"#, [:]),
        "RateLimit-Policy": (200, #""default";q=100;w=60"#, ["RateLimit": #""default";r=5;t=10"#]),
        "RateLimit-Limit": (200, "100", [:]),
        "RateLimit-Remaining": (200, "5", [:]),
        "RateLimit-Reset": (200, "7", ["RateLimit-Remaining": "5"]),
        "X-RateLimit-Limit": (200, "60", [:]),
        "X-RateLimit-Remaining": (200, "3", [:]),
        "X-RateLimit-Reset": (200, "42", ["X-RateLimit-Remaining": "1"]),
        "Retry-After": (429, "12", [:]),
    ]

    @Test("a response is read whatever the case of each field name, beside other fields", arguments: 0..<8)
    func anyCase(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 29, 2)
        let url = try #require(URL(string: "https://api.example.com/"))
        #expect(Set(Self.shapes.keys) == Set(RateLimitHeaders.fieldNames))
        for name in RateLimitHeaders.fieldNames {
            let shape = try #require(Self.shapes[name])
            let spelled = String(
                name.map { random.next() % 2 == 0 ? Character($0.lowercased()) : Character($0.uppercased()) }
            )
            var fields = shape.with.merging(["Content-Type": "application/json", "X-Request-ID": "f058"]) { $1 }
            let without = observe(fields, status: shape.status)
            fields[spelled] = shape.value
            let response = try #require(
                HTTPURLResponse(url: url, statusCode: shape.status, httpVersion: "HTTP/1.1", headerFields: fields)
            )
            let observed = RateLimitHeaders.observe(response, currentDate: { now })
            #expect(observed == observe(fields, status: shape.status), "\(spelled)")
            #expect(observed != without, "\(spelled) was not read")
        }
    }

    @Test("the wall clock is read only for a response with a rate-limit field or a 429 or 503")
    func wallClockOnlyWhenNeeded() throws {
        let url = try #require(URL(string: "https://api.example.com/"))
        let reads = Locked(0)
        let currentDate = { [now] in
            reads.withLock { $0 += 1 }
            return now
        }
        for (status, fields, read) in [
            (200, ["Content-Type": "application/json"], 0), (204, [:], 0), (429, [:], 1), (503, ["Via": "x"], 1),
            (200, ["x-ratelimit-remaining": "1"], 1),
        ] {
            let response = try #require(
                HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
            )
            reads.withLock { $0 = 0 }
            let observed = RateLimitHeaders.observe(response, currentDate: currentDate)
            #expect(reads.withLock { $0 } == read, "\(status) \(fields)")
            #expect(observed == observe(fields, status: status))
        }
    }

    @Test("a list splits on its ASCII separators only: a combining mark after a comma, U+037E for a semicolon")
    func separatorsAreBytes() {
        // The comma ends the first member even though a combining mark follows it; the second member's r=0 is
        // the most restrictive.
        let combining = observe(["RateLimit": "a;r=5;t=9,\u{301}b;r=0;t=3"])
        #expect(combining.remaining == 0)
        #expect(combining.reset == .seconds(3))
        // U+037E (Greek question mark) is canonically equivalent to ";" as a String, but is not a separator.
        let greek = observe(["RateLimit": "default;r=5\u{37E}t=10"])
        #expect(greek.remaining == 5)
        #expect(greek.reset == nil)
        // A no-break space is not the optional whitespace around a parameter.
        let noBreak = observe(["RateLimit": "default;r=4;t=\u{A0}7"])
        #expect(noBreak.reset == nil)
        // Keys are lowercased in ASCII only: the Kelvin sign is not "k", and "R" is "r".
        let upper = observe(["RateLimit": "default;R=6;T=2"])
        #expect(upper.remaining == 6)
        #expect(upper.reset == .seconds(2))
    }

    @Test("a structured-field list's shape depends only on its ASCII bytes (seeded)")
    func structureIgnoresNonASCII() {
        // Replacing each non-ASCII scalar with "x" must not change how the list splits: the parse of the replaced
        // text is the parse of the original with the same replacement in every item, key and value.
        let alphabet: [String] = [
            ",", ";", "=", "\"", "\\", " ", "\t", "r", "t", "q", "w", "R", "1", "0", "a",
            "\u{301}", "\u{37E}", "\u{A0}", "\u{212A}", "\u{130}", "é", "\u{FF1B}", "\u{200B}",
        ]
        func replaced(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.map { $0.isASCII ? $0 : "x" }))
        }
        var generator = SplitMix64(seed: 20_261_207)
        for _ in 0..<3_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let text = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            let expected = StructuredFieldList.parse(text).map { member in
                StructuredFieldList.Member(
                    item: replaced(member.item),
                    parameters: member.parameters.map { (replaced($0.key), replaced($0.value)) }
                )
            }
            let actual = StructuredFieldList.parse(replaced(text))
            #expect(actual.count == expected.count, "\(text.debugDescription)")
            for (lhs, rhs) in zip(actual, expected) {
                #expect(lhs.item.hasSameBytes(as: rhs.item), "\(text.debugDescription)")
                #expect(
                    lhs.parameters.elementsEqual(rhs.parameters) {
                        $0.key.hasSameBytes(as: $1.key) && $0.value.hasSameBytes(as: $1.value)
                    },
                    "\(text.debugDescription)"
                )
            }
        }
    }
}
