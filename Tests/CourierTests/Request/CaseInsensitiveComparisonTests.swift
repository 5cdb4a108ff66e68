import CourierTesting
import Foundation
import Testing

@testable import Courier

/// Header names and origins are compared without case in the strings' storage; the comparison over their UTF-8
/// views is the reference they must agree with.
@Suite("Case-insensitive comparisons of header names and origins")
struct CaseInsensitiveComparisonTests {
    /// Pieces of names: letters of both cases, the bytes around the letters' ranges, and characters that are not
    /// ASCII (some whose lowercase is ASCII or of another length).
    private static let pieces = [
        "a", "A", "z", "Z", "m", "M", "-", "0", "9", "@", "[", "`", "{", "_", "~", "É", "é", "ß", "\u{212A}", "İ",
        "ǅ", "Content", "content", "LENGTH", "x-",
    ]

    @Test("names compared in their storage and through their views agree", arguments: 0..<4)
    func headerNames(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 4)
        func text() -> String {
            (0..<Int(random.next() % 5)).map { _ in Self.pieces[Int(random.next() % UInt64(Self.pieces.count))] }
                .joined()
        }
        var equal = 0
        for _ in 0..<2_000 {
            let name = text()
            // Half the time the same name with some letters' case changed, or some ASCII bytes' 0x20 bit flipped
            // (`@` and a backtick differ only there, and are not letters).
            let other: String
            switch random.next() % 4 {
            case 0: other = name.map { random.next() % 2 == 0 ? $0.uppercased() : String($0) }.joined()
            case 1:
                var scalars = String.UnicodeScalarView()
                for scalar in name.unicodeScalars {
                    let flips = scalar.value < 0x80 && random.next() % 2 == 0
                    scalars.append(flips ? Unicode.Scalar(UInt8(scalar.value ^ 0x20)) : scalar)
                }
                other = String(scalars)
            default: other = text()
            }
            let fast = name.caseInsensitiveEquals(other)
            #expect(fast == name.caseInsensitiveEqualsByViews(other), "\(name) vs \(other)")
            #expect(fast == other.caseInsensitiveEquals(name), "\(name) vs \(other)")
            if fast { equal += 1 }
        }
        #expect(equal > 300)
        #expect(equal < 1_700)
    }

    @Test(
        "only ASCII letters fold: names that differ in a byte that is not ASCII are two names, whatever Unicode's case",
        arguments: [("X-\u{00C9}", "X-\u{00E9}"), ("\u{03A3}-Id", "\u{03C3}-Id"), ("X-\u{0416}", "X-\u{0436}")]
    )
    func notASCIIComparesBytes(_ name: String, _ other: String) {
        // RFC 9110 §5.1 makes field names case-insensitive, and a name is a token of ASCII: no name of a valid head
        // has these bytes, and a server that sends them (to confuse whoever reads them) gets no Unicode folding of
        // them, in either comparison, and never in the strings' own storage alone.
        #expect(!name.caseInsensitiveEquals(other))
        #expect(!name.caseInsensitiveEqualsByViews(other))
        #expect(name.caseInsensitiveEquals(name))
        #expect("X-Id-\u{00C9}".caseInsensitiveEquals("x-ID-\u{00C9}"))
    }

    @Test("an origin's scheme and host compared in their storage and through their views agree", arguments: 0..<4)
    func origins(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 5)
        func text() -> String {
            (0..<Int(random.next() % 5)).map { _ in Self.pieces[Int(random.next() % UInt64(Self.pieces.count))] }
                .joined()
        }
        var equal = 0
        for _ in 0..<2_000 {
            let lowercased = text().lowercased()
            let candidate =
                random.next() % 2 == 0
                ? lowercased.map { random.next() % 2 == 0 ? $0.uppercased() : String($0) }.joined() : text()
            let fast = HTTPOrigin.equalsLowercased(candidate, lowercased)
            #expect(fast == HTTPOrigin.equalsLowercasedByViews(candidate, lowercased), "\(candidate) vs \(lowercased)")
            if fast { equal += 1 }
        }
        #expect(equal > 300)
        #expect(equal < 1_700)
    }
}
