import Testing

@testable import Courier

/// The clamping conversion every network number goes through: no value a server can send traps, and each
/// extreme lands on a bound a reader can name.
@Suite("NetworkNumber: numbers from the network clamp, never trap")
struct NetworkNumberTests {
    /// Texts a hostile or broken server may send where a number belongs.
    static let hostileTexts = [
        "1e308", "-1e308", "1e21", "-0", "NaN", "nan", "inf", "-inf", "9223372036854775807",
        "9223372036854775808", "18446744073709551616", String(repeating: "9", count: 400), "", " ", "-1", "1.5",
        "0x10", "１２", "12abc", "\t42 ", "4 2",
    ]

    @Test("integer: digits clamp at the maximum, anything else is nil", arguments: hostileTexts)
    func integer(text: String) {
        let value = NetworkNumber.integer(text)
        let isDigits =
            !text.isEmpty && text.trimmingSpaces.allSatisfy { $0.isASCII && $0.isNumber }
            && !text.trimmingSpaces.isEmpty
        #expect((value != nil) == isDigits, "\(text.debugDescription) → \(String(describing: value))")
        if let value { #expect(value >= 0) }
    }

    @Test("integer: exact below Int64.max, Int64.max above it, and the caller's maximum holds")
    func integerBounds() {
        #expect(NetworkNumber.integer("9223372036854775806") == Int64.max - 1)
        #expect(NetworkNumber.integer("9223372036854775808") == .max)
        #expect(NetworkNumber.integer(String(repeating: "9", count: 400)) == .max)
        #expect(NetworkNumber.integer("\t42 ") == 42)
        #expect(NetworkNumber.integer("4 2") == nil)
        #expect(NetworkNumber.integer("100", maximum: 60) == 60)
        #expect(NetworkNumber.leadingInteger("10;w=60") == 10)
        #expect(NetworkNumber.leadingInteger(" 18446744073709551616, 5") == .max)
        #expect(NetworkNumber.leadingInteger("x10") == nil)
    }

    @Test("digits: ASCII digits only, no spaces or sign; they clamp at the maximum", arguments: hostileTexts)
    func digits(text: String) {
        let value = NetworkNumber.digits(text.utf8)
        let isDigits = !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        #expect((value != nil) == isDigits, "\(text.debugDescription) → \(String(describing: value))")
        if isDigits { #expect(value == NetworkNumber.integer(text)) }
        #expect(NetworkNumber.digits(text.utf8, maximum: 60).map { $0 <= 60 } ?? true)
    }

    @Test("digits: exact below the maximum, the maximum above it")
    func digitsBounds() {
        #expect(NetworkNumber.digits("0".utf8) == 0)
        #expect(NetworkNumber.digits("007".utf8) == 7)
        #expect(NetworkNumber.digits("".utf8) == nil)
        #expect(NetworkNumber.digits(" 7".utf8) == nil)
        #expect(NetworkNumber.digits("9223372036854775807".utf8) == .max)
        #expect(NetworkNumber.digits("9223372036854775808".utf8) == .max)
        #expect(NetworkNumber.digits("2147483648".utf8, maximum: NetworkNumber.maximumCount) == 2_147_483_647)
        #expect(NetworkNumber.digits("2147483646".utf8, maximum: NetworkNumber.maximumCount) == 2_147_483_646)
    }

    @Test("seconds: finite and non-negative, at most maximumSeconds", arguments: hostileTexts)
    func seconds(text: String) {
        guard let value = NetworkNumber.seconds(text) else { return }
        #expect(value.isFinite)
        #expect(value >= 0)
        #expect(value <= Double(NetworkNumber.maximumSeconds))
        // Whatever came out converts to a Duration and an Int without trapping.
        #expect(NetworkNumber.duration(seconds: value) <= .seconds(NetworkNumber.maximumSeconds))
        #expect(NetworkNumber.int(value) >= 0)
    }

    @Test("seconds: the extremes land on their bounds")
    func secondsBounds() {
        #expect(NetworkNumber.seconds("1e308") == Double(NetworkNumber.maximumSeconds))
        #expect(NetworkNumber.seconds("-0") == 0)
        #expect(NetworkNumber.seconds("NaN") == nil)
        #expect(NetworkNumber.seconds("inf") == nil)
        #expect(NetworkNumber.seconds("-1") == nil)
        #expect(NetworkNumber.seconds(" 1.5\t") == 1.5)
    }

    @Test(
        "duration and int: every Double converts",
        arguments: [
            Double.nan, -.nan, .infinity, -.infinity, 1e308, -1e308, 1e21, 1.7e20, -0.0, 0, 0.5,
            9_223_372_036_854_775_808.0, 18_446_744_073_709_551_616.0, -9_223_372_036_854_775_808.0,
            .leastNonzeroMagnitude, .greatestFiniteMagnitude,
        ]
    )
    func conversions(value: Double) {
        let duration = NetworkNumber.duration(seconds: value)
        #expect(duration >= .zero)
        #expect(duration <= .seconds(NetworkNumber.maximumSeconds))
        let int = NetworkNumber.int(value)
        if value.isNaN { #expect(int == 0) }
        if value >= 9_223_372_036_854_775_808.0 { #expect(int == .max) }
        if value <= -9_223_372_036_854_775_808.0 { #expect(int == .min) }
        if abs(value) < 1e15, !value.isNaN { #expect(int == Int(value.rounded(.towardZero))) }
    }

    @Test("duration(wholeSeconds:) clamps to 0...maximumSeconds")
    func integerDuration() {
        #expect(NetworkNumber.duration(wholeSeconds: Int64.max) == .seconds(NetworkNumber.maximumSeconds))
        #expect(NetworkNumber.duration(wholeSeconds: Int64.min) == .zero)
        #expect(NetworkNumber.duration(wholeSeconds: 30) == .seconds(30))
    }
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        let start = drop { $0 == " " || $0 == "\t" }
        guard let end = start.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return start[...end]
    }
}
