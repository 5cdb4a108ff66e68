/// The one audited way Courier turns a number a server sent (a header field, an SSE `retry:`, a `Content-Range`)
/// into a Swift number: every conversion clamps, none traps.
///
/// `Duration.seconds(_: Double)` traps above about 1.7e20 seconds and `Int(_: Double)` traps out of range, so a
/// response carrying `X-RateLimit-Reset: 1e21` or `Age: 100000000000000000000` would stop the process if either
/// were called on the raw value. Code that reads a number from the network calls these helpers instead; the
/// table in `NetworkNumberTests` feeds every one of them `1e308`, `-0`, `NaN`, `2^63`, `2^64` and 400 digits.
enum NetworkNumber {
    /// The most seconds any header value counts for: 2^40 s, about 34,800 years. Every use in Courier reads a
    /// larger value as "for ever", and this bound keeps sums and dates far from `Duration`, `Date` and `Int`
    /// limits.
    static let maximumSeconds: Int64 = 1 << 40

    /// The most a count from the network (requests allowed or left in a rate-limit window) counts for: 2^31 − 1,
    /// the bound RFC 9111 §1.2.2 suggests for delta-seconds. Larger counts read as "plenty", and this bound keeps
    /// sums and differences of counts far from `Int`'s limits.
    static let maximumCount: Int64 = (1 << 31) - 1

    /// Decimal digits, optionally surrounded by spaces or tabs, as a number from 0 to `maximum` (a longer run of
    /// digits is `maximum`); `nil` when `text` holds anything else (a sign, a dot, an empty string).
    static func integer<S: StringProtocol>(_ text: S, maximum: Int64 = .max) -> Int64? {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let start = text.utf8.drop(while: isSpace)
        let body = start.prefix { !isSpace($0) }
        guard start.dropFirst(body.count).allSatisfy(isSpace) else { return nil }
        return digits(body, maximum: maximum)
    }

    /// ASCII decimal digits and nothing else (no spaces, no sign) as a number from 0 to `maximum` (a longer run
    /// of digits is `maximum`); `nil` for anything else, or no bytes. For byte-level parsers such as the
    /// event-stream `retry:` field.
    static func digits<Bytes: Collection<UInt8>>(_ bytes: Bytes, maximum: Int64 = .max) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? maximum : min(sum, maximum)
        }
        return value
    }

    /// The leading decimal digits of `text` (after spaces or tabs), clamped at `maximum` as ``integer(_:maximum:)``
    /// does; `nil` when it does not start with a digit. For fields such as `RateLimit-Remaining: 10;w=60`.
    static func leadingInteger<S: StringProtocol>(_ text: S, maximum: Int64 = .max) -> Int64? {
        let digits = text.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            .prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !digits.isEmpty else { return nil }
        return integer(Substring(decoding: digits, as: UTF8.self), maximum: maximum)
    }

    /// A finite, non-negative decimal number of seconds (`"1.5"`, `"1e3"`, surrounded by spaces or tabs);
    /// `nil` for anything else (`NaN`, `inf`, a negative number, text). `-0` is zero. Values above
    /// ``maximumSeconds`` are ``maximumSeconds``.
    static func seconds<S: StringProtocol>(_ text: S) -> Double? {
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        let end = trimmed.lastIndex { $0 != " " && $0 != "\t" }
        guard let end, let number = Double(String(trimmed[...end])) else { return nil }
        guard number.isFinite, number >= 0 else { return nil }
        return min(number, Double(maximumSeconds))
    }

    /// `seconds` as a `Duration`: `NaN`, negative values and `-0` are zero, values above ``maximumSeconds`` are
    /// ``maximumSeconds``.
    static func duration(seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }  // false for NaN too
        guard seconds < Double(maximumSeconds) else { return .seconds(maximumSeconds) }
        return .seconds(seconds)
    }

    /// `seconds` as a `Duration`, clamped to `0...maximumSeconds`.
    static func duration(wholeSeconds seconds: Int64) -> Duration {
        .seconds(min(max(seconds, 0), maximumSeconds))
    }

    /// `value` rounded toward zero as an `Int`: `NaN` is zero, values beyond `Int`'s range are `Int.min` or
    /// `Int.max`.
    static func int(_ value: Double) -> Int {
        guard !value.isNaN else { return 0 }
        // 2^63 as a Double; every Double below it converts exactly after rounding toward zero.
        let limit = 9_223_372_036_854_775_808.0
        if value >= limit { return .max }
        if value <= -limit { return .min }
        return Int(value.rounded(.towardZero))
    }

    /// `value` as an `Int`: values beyond `Int`'s range (on a 32-bit platform) are clamped.
    static func int(_ value: Int64) -> Int {
        Int(clamping: value)
    }
}
