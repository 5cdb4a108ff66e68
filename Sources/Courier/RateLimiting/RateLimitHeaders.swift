import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one response says about a rate limit: the quota, what is left of it, when it comes back, and
/// whether the server refused the request for being over it.
struct RateLimitObservation: Sendable, Equatable {
    /// Requests allowed per window, when the server says.
    var limit: Int?
    /// Requests left in the current window, when the server says.
    var remaining: Int?
    /// Time from now until the window resets (the quota is restored), when the server says.
    var reset: Duration?
    /// The length of a window, when the server says (`RateLimit-Policy`'s `w`).
    var window: Duration?
    /// The delay a `429` or `503` asked for with `Retry-After`.
    var retryAfter: Duration?
    /// Whether the status was `429` or `503`: the server refused the request.
    var isThrottled = false

    /// Whether the response said anything about the rate limit.
    var isEmpty: Bool { limit == nil && remaining == nil && reset == nil && window == nil && !isThrottled }
}

/// Reads the rate-limit fields of a response.
///
/// In order of preference (the first family present wins):
/// 1. The IETF fields of draft-ietf-httpapi-ratelimit-headers (drafts 08 and later), structured-field lists
///    of named policies: `RateLimit: "default";r=50;t=30` (`r` remaining, `t` seconds until the quota is
///    restored) and `RateLimit-Policy: "default";q=100;w=60` (`q` quota, `w` window in seconds). When several
///    policies are listed, the most restrictive one (least remaining) applies.
/// 2. The earlier drafts' forms: a dictionary `RateLimit: limit=100, remaining=50, reset=30`, or the separate
///    `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` fields, with `RateLimit-Policy: 100;w=60`.
/// 3. The common `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.
///
/// A reset is delta seconds or, in the `X-` form as GitHub and others send it, an epoch time in seconds. A
/// value larger than half the current epoch time (about 28 years in seconds today) is an epoch time: no
/// window lasts that long, and no server's clock is that far behind. An epoch time in the past means "now".
/// A value beyond 2^40 (about 34,800 years in seconds) that is an epoch time in milliseconds (a thousandth of
/// it is between half and twice the current epoch time, as some APIs send it) is read as one.
///
/// Every number goes through ``NetworkNumber``: a reset or window beyond ``NetworkNumber/maximumSeconds``
/// (about 34,800 years) is that long, a count beyond ``NetworkNumber/maximumCount`` is that many, and none
/// traps, whatever the server sends.
///
/// A `429` or `503` also carries `Retry-After` (seconds or an HTTP-date; see ``RetryAfter``).
enum RateLimitHeaders {
    /// Reads `response`'s fields; `currentDate` is the wall clock, for epoch resets and HTTP-dates, read only when
    /// the response has a rate-limit field or a `429` or `503` status.
    ///
    /// The fields are read in one pass over `allHeaderFields`, names compared without allocating and values cast only
    /// for the names in ``fieldNames``: `value(forHTTPHeaderField:)` lowercases every stored name on each of the six
    /// or more lookups (≈ 10k instructions a response on Linux). A response without any of those fields and with
    /// another status is the empty observation at once.
    static func observe(_ response: HTTPURLResponse, currentDate: () -> Date) -> RateLimitObservation {
        var found: [(name: String, value: String)] = []
        let fields = response.allHeaderFields
        for key in fields.keys {
            guard let name = string(key.base), isFieldName(name), let value = fields[key] as? String else { continue }
            found.append((name, value))
        }
        let status = response.statusCode
        if found.isEmpty, status != 429, status != 503 { return RateLimitObservation() }
        return observe(status: status, now: currentDate()) { name in
            found.first { $0.name.caseInsensitiveEquals(name) }?.value
        }
    }

    /// `value` as a string: what `value as? String` gives, without a run-time cast when it is one (`value` is an
    /// opened `Any`, and the cast from it costs more than the rest of reading a field name).
    private static func string<T>(_ value: T) -> String? {
        T.self == String.self ? unsafeBitCast(value, to: String.self) : value as? String
    }

    /// Whether `name` is one of ``fieldNames``, in any case.
    static func isFieldName(_ name: String) -> Bool {
        let length = name.utf8.count
        guard length < 64, fieldNameLengths & 1 << length != 0 else { return false }
        return fieldNames.contains(where: name.caseInsensitiveEquals)
    }

    /// Every field ``observe(status:now:field:)`` asks for.
    static let fieldNames = [
        "RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
        "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After",
    ]

    /// A bit for each length of ``fieldNames``, in bytes: a name of another length is none of them.
    private static let fieldNameLengths: UInt64 = fieldNames.reduce(0) { $0 | 1 << $1.utf8.count }

    /// Reads the fields `field` returns (by name, case-insensitively) of a response with `status`.
    static func observe(status: Int, now: Date, field: (String) -> String?) -> RateLimitObservation {
        var observation = RateLimitObservation()
        if let rateLimit = field("RateLimit") {
            let members = StructuredFieldList.parse(rateLimit)
            if members.contains(where: { $0.value("r") != nil }) {
                observation = ietf(members, policies: field("RateLimit-Policy").map(StructuredFieldList.parse) ?? [])
            } else {
                observation = dictionaryForm(members)
                observation.window = field("RateLimit-Policy").flatMap(olderPolicyWindow)
            }
        } else if field("RateLimit-Remaining") != nil || field("RateLimit-Limit") != nil {
            observation.limit = field("RateLimit-Limit").flatMap(leadingInteger)
            observation.remaining = field("RateLimit-Remaining").flatMap(leadingInteger)
            observation.reset = field("RateLimit-Reset").flatMap { reset($0, now: now) }
            observation.window = field("RateLimit-Policy").flatMap(olderPolicyWindow)
        } else {
            observation.limit = field("X-RateLimit-Limit").flatMap(leadingInteger)
            observation.remaining = field("X-RateLimit-Remaining").flatMap(leadingInteger)
            observation.reset = field("X-RateLimit-Reset").flatMap { reset($0, now: now) }
        }
        if status == 429 || status == 503 {
            observation.isThrottled = true
            observation.retryAfter = field("Retry-After").flatMap { RetryAfter.delay($0, now: now) }
        }
        return observation
    }

    /// The IETF form: the policy with the least remaining, with its quota and window from `policies`.
    private static func ietf(
        _ members: [StructuredFieldList.Member],
        policies: [StructuredFieldList.Member]
    ) -> RateLimitObservation {
        var observation = RateLimitObservation()
        var chosen: StructuredFieldList.Member?
        for member in members {
            guard let remaining = member.value("r").flatMap(leadingInteger) else { continue }
            if let current = observation.remaining, current <= remaining { continue }
            observation.remaining = remaining
            chosen = member
        }
        guard let chosen else { return observation }
        observation.reset = chosen.value("t").flatMap(seconds)
        let named = policies.first { $0.item.hasSameBytes(as: chosen.item) }
        let policy = named ?? (policies.count == 1 ? policies.first : nil)
        observation.limit = policy?.value("q").flatMap(leadingInteger)
        observation.window = policy?.value("w").flatMap(seconds)
        return observation
    }

    /// The dictionary form of draft 07: `limit=100, remaining=50, reset=30`.
    private static func dictionaryForm(_ members: [StructuredFieldList.Member]) -> RateLimitObservation {
        var observation = RateLimitObservation()
        for member in members {
            let (name, value) = FieldText.splitOnce(member.item[...], at: UInt8(ascii: "="))
            guard let value else { continue }
            switch String(name).asciiLowercased {
            case "limit": observation.limit = leadingInteger(value)
            case "remaining": observation.remaining = leadingInteger(value)
            case "reset": observation.reset = seconds(value)
            default: break
            }
        }
        return observation
    }

    /// The window of an earlier draft's policy, `100;w=60`: the first policy's `w`.
    private static func olderPolicyWindow(_ value: String) -> Duration? {
        StructuredFieldList.parse(value).lazy.compactMap { $0.value("w").flatMap(seconds) }.first
    }

    /// A reset as delta seconds or an epoch time (see the type's overview), from `now`. A reset of
    /// ``NetworkNumber/maximumSeconds`` or more (`1e21`) is that long, as a delta: "for ever".
    static func reset(_ value: String, now: Date) -> Duration? {
        guard let number = NetworkNumber.seconds(value) else { return nil }
        let epochNow = now.timeIntervalSince1970
        if number > epochNow / 2, number < Double(NetworkNumber.maximumSeconds) {
            return NetworkNumber.duration(seconds: number - epochNow)
        }
        // Clamped: the value may be milliseconds since the epoch, which no clamped delta should stand for.
        if number >= Double(NetworkNumber.maximumSeconds), let raw = Double(value.trimmingCharacters(in: .whitespaces)),
            raw.isFinite
        {
            let seconds = raw / 1_000
            if seconds > epochNow / 2, seconds < epochNow * 2 {
                return NetworkNumber.duration(seconds: seconds - epochNow)
            }
        }
        return NetworkNumber.duration(seconds: number)
    }

    /// A non-negative number of seconds, possibly fractional, at most ``NetworkNumber/maximumSeconds``.
    private static func seconds<S: StringProtocol>(_ value: S) -> Duration? {
        NetworkNumber.seconds(value).map(NetworkNumber.duration(seconds:))
    }

    /// The count a value starts with (`"100"`, `"100, 100;w=60"`), when it is one and not negative; at most
    /// ``NetworkNumber/maximumCount``.
    private static func leadingInteger<S: StringProtocol>(_ value: S) -> Int? {
        NetworkNumber.leadingInteger(value, maximum: NetworkNumber.maximumCount).map(NetworkNumber.int)
    }
}

/// A lenient reader of RFC 9651 structured-field lists: members separated by commas, each an item followed by
/// `;key=value` parameters. Quoted strings may contain commas and semicolons; a malformed member is kept as
/// well as it can be rather than failing the whole field, since a client should pace itself from whatever
/// the server sends.
///
/// The reader works on the field's bytes: only the ASCII `,` `;` `=` `"` and `\\` separate, quote and escape, and
/// only spaces and tabs are trimmed. Read as `Character`s, a comma followed by a combining mark would be one
/// character and no separator, and U+037E (Greek question mark) would equal `;`, so a server's list would split
/// where no other reader splits it.
enum StructuredFieldList {
    struct Member: Equatable {
        /// The bare item, unquoted when it was a string: `default`, `100`, or `limit=100` in a dictionary.
        var item: String
        /// The parameters in order, keys lowercased in ASCII; a parameter without a value has the value `"?1"`.
        var parameters: [(key: String, value: String)]

        /// The first parameter named `key` (its bytes).
        func value(_ key: String) -> String? {
            parameters.first { $0.key.hasSameBytes(as: key) }?.value
        }

        static func == (lhs: Member, rhs: Member) -> Bool {
            lhs.item.hasSameBytes(as: rhs.item)
                && lhs.parameters.elementsEqual(rhs.parameters) {
                    $0.key.hasSameBytes(as: $1.key) && $0.value.hasSameBytes(as: $1.value)
                }
        }
    }

    static func parse(_ value: String) -> [Member] {
        split(value[...], on: UInt8(ascii: ",")).compactMap { text in
            let parts = split(text, on: UInt8(ascii: ";"))
            let item = unquoted(parts[0])
            guard !item.isEmpty || parts.count > 1 else { return nil }
            let parameters = parts.dropFirst().compactMap { part -> (key: String, value: String)? in
                let (name, value) = FieldText.splitOnce(part, at: UInt8(ascii: "="))
                let key = String(FieldText.trimmed(name)).asciiLowercased
                guard !key.isEmpty else { return nil }
                return (key, value.map(unquoted) ?? "?1")
            }
            return Member(item: item, parameters: parameters)
        }
    }

    /// Splits `text` on `separator` outside double quotes (a backslash escapes the next byte in quotes).
    private static func split(_ text: Substring, on separator: UInt8) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var inQuotes = false
        var escaped = false
        var index = text.utf8.startIndex
        while index != text.utf8.endIndex {
            let byte = text.utf8[index]
            if escaped {
                escaped = false
            } else if inQuotes, byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == separator, !inQuotes {
                parts.append(text[start..<index])
                start = text.utf8.index(after: index)
            }
            text.utf8.formIndex(after: &index)
        }
        parts.append(text[start...])
        return parts
    }

    /// Trims spaces and tabs and removes the quotes (and escapes) of a quoted string.
    private static func unquoted(_ text: Substring) -> String {
        let trimmed = FieldText.trimmed(text)
        let bytes = trimmed.utf8
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else {
            return String(trimmed)
        }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count - 2)
        var escaped = false
        for byte in bytes.dropFirst().dropLast() {
            if !escaped, byte == UInt8(ascii: "\\") {
                escaped = true
                continue
            }
            escaped = false
            result.append(byte)
        }
        return String(decoding: result, as: UTF8.self)
    }
}
