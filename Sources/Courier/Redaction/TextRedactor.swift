/// The pattern rules of ``Redaction/redactedText(_:)``: one left-to-right pass over the UTF-8 bytes of a text,
/// linear in its length, that copies nothing until it finds something to replace.
///
/// It reads the text as a sequence of *words* (runs of letters, digits, `_`, `-` and `.`) and looks at what
/// follows each word:
/// - `word=value`, or `=`/the separator before it percent-encoded (`%3D`, `%253D`, `%26`, `%3F`, …): a query
///   or form parameter; its value is replaced when the name is sensitive (see ``Redaction/isSensitiveParameter(_:)``).
///   After `?`, `&` or `#` (a URL) the name is compared ignoring case. Elsewhere (prose, such as an `NSError`'s
///   `Domain=… Code=-1004`), the names that are also everyday field labels (`code`, `key`, `sig`, `auth`) count
///   only written in lowercase or uppercase, as parameters and environment variables are.
/// - `"word": "value"` (JSON, also escaped inside another string, and `'…'`), `word: "value"` and
///   `word: Optional("value")` (Swift's descriptions of values), `word: value`: the value is replaced when the
///   name contains a fragment of ``Redaction/sensitiveNameFragments``.
/// - `Authorization:` and the other ``Redaction/sensitiveHeaderNames`` (with the names added by
///   ``CredentialHeaders/register(_:)``) followed by `:` or `=`: the rest of the line.
/// - `Bearer`, `Basic`, `Digest` or `Token`, whitespace (or an encoded space: `%20`, `+`), and at least four token
///   characters (encoded ones too, after an encoded space): those characters.
/// - `scheme://user:password@` (also percent-encoded): the user-info.
///
/// A value cut off by the end of the text (a truncated body) is replaced up to the end.
///
/// In ``Mode/url`` (a whole URL), a parameter's value runs to the next `&` or `#` (a query value may contain
/// `,`, `;`, `/` and `?`), the header-line rule does not apply, and `REDACTED` replaces what is removed.
struct TextRedactor {
    enum Mode { case text, url }

    let mode: Mode

    /// What replaces a value; `REDACTED` inside URLs, where `<` and `>` are not allowed.
    var placeholder: [UInt8] { mode == .url ? RedactionNames.urlReplacement : RedactionNames.textReplacement }

    /// Returns `text` with the rules applied, or `nil` when nothing had to change.
    func redact(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var scan = Scan(text: text, mode: mode, placeholder: placeholder, outputLimit: .max)
        scan.run()
        return scan.output
    }

    /// Returns the start of `text`, redacted, once at least `length` bytes of output are made: what a
    /// preview needs, without reading the rest. Every value that starts in the returned part is replaced
    /// whole, however far it runs.
    func redactedPrefix(_ text: UnsafeBufferPointer<UInt8>, length: Int) -> (bytes: [UInt8], isWhole: Bool) {
        var scan = Scan(text: text, mode: mode, placeholder: placeholder, outputLimit: length)
        scan.run()
        let end = scan.stoppedAt ?? text.count
        return (scan.output ?? Array(UnsafeBufferPointer(rebasing: text[..<end])), scan.stoppedAt == nil)
    }
}

// MARK: - The scan

private struct Scan {
    let t: UnsafeBufferPointer<UInt8>
    let mode: TextRedactor.Mode
    let placeholder: [UInt8]
    /// The redacted text so far, up to `copied`; `nil` while nothing has been replaced.
    var output: [UInt8]?
    /// How much of `t` has been written to `output` (or would be, once something is replaced).
    var copied = 0
    /// The scan stops, between two words, once it has made this many bytes of output.
    let outputLimit: Int
    /// Where it stopped, if it did before the end.
    var stoppedAt: Int?
    /// How much longer the output is than the input up to `copied` (placeholders are not as long as values).
    var outputShift = 0

    init(text: UnsafeBufferPointer<UInt8>, mode: TextRedactor.Mode, placeholder: [UInt8], outputLimit: Int) {
        self.t = text
        self.mode = mode
        self.placeholder = placeholder
        self.outputLimit = outputLimit
    }

    var n: Int { t.count }

    /// Writes `t[copied..<range.lowerBound]` and `replacement`, and skips `range`.
    mutating func replace(_ range: Range<Int>, with replacement: [UInt8]) {
        if output == nil {
            output = []
            output!.reserveCapacity(n + 16)
        }
        output!.append(contentsOf: UnsafeBufferPointer(rebasing: t[copied..<range.lowerBound]))
        output!.append(contentsOf: replacement)
        copied = range.upperBound
        outputShift = output!.count - copied
    }

    mutating func run() {
        var i = 0
        while i < n {
            if i + outputShift >= outputLimit {
                stoppedAt = i
                break
            }
            let byte = t[i]
            if isWordByte(byte) {
                let context: Context =
                    i > 0
                        && (t[i - 1] == UInt8(ascii: "?") || t[i - 1] == UInt8(ascii: "&")
                            || t[i - 1] == UInt8(ascii: "#"))
                    ? .url : .prose
                i = word(at: i, context: context)
            } else if byte == UInt8(ascii: "%"), let escape = escape(at: i) {
                // A percent-encoded separator; the hex digits are not the start of a word.
                guard escape.end < n, isWordByte(t[escape.end]) else {
                    i = escape.end
                    continue
                }
                let separator =
                    escape.byte == UInt8(ascii: "?") || escape.byte == UInt8(ascii: "&")
                    || escape.byte == UInt8(ascii: "#")
                i = word(at: escape.end, context: separator ? .url : .prose)
            } else {
                i += 1
            }
        }
        if output != nil {
            output!.append(contentsOf: UnsafeBufferPointer(rebasing: t[copied..<(stoppedAt ?? n)]))
        }
    }

    enum Context { case url, prose }

    /// Handles the word starting at `start`; returns where the scan goes on.
    mutating func word(at start: Int, context: Context) -> Int {
        var end = start
        while end < n && isWordByte(t[end]) { end += 1 }
        let name = start..<end

        // "name": "value", 'name': 'value', \"name\": \"value\" (the colon first: most quoted words are values);
        // a sensitive name, or a credential header's (a header dictionary printed, registered names included)
        if let quoted = quotedKey(name), let afterColon = colon(after: quoted.afterKey),
            hasSensitiveFragment(name) || isHeaderLineName(name),
            let value = quotedValue(at: afterColon, quote: quoted.quote, backslashes: quoted.backslashes)
        {
            redactValue(value)
            return value.resume
        }
        guard end < n else { return end }

        // scheme://user:password@host, also percent-encoded.
        if isLetter(t[start]), let userInfo = userInfo(afterScheme: end) {
            if !userInfo.isEmpty, !isPlaceholder(userInfo) {
                replace(userInfo, with: redactedUserInfo)
            }
            return userInfo.upperBound
        }

        // name=value (a query or form parameter), with `=` possibly percent-encoded.
        if let afterEquals = equalsSign(at: end) {
            if mode == .text && isHeaderLineName(name) {
                return redactLine(from: afterEquals)
            }
            if isSensitiveParameter(name, context: context) {
                // After an encoded `=` the parameter sits inside another's value, whose encoded separators end it
                // too; after a literal one, an encoded space, `&` or `#` is part of the value (`correct%20horse`).
                let isNested = t[end] == UInt8(ascii: "%")
                return redactParameterValue(from: afterEquals, context: context, nested: isNested)
            }
            return afterEquals
        }

        // name: value, name = "value"
        var k = end
        while k < n && (t[k] == UInt8(ascii: " ") || t[k] == UInt8(ascii: "\t")) { k += 1 }
        if k < n && (t[k] == UInt8(ascii: ":") || t[k] == UInt8(ascii: "=")) {
            if mode == .text && isHeaderLineName(name) {
                return redactLine(from: k + 1)
            }
            if hasSensitiveFragment(name) {
                return redactLooseValue(from: k + 1)
            }
            return end
        }

        // Bearer abc…, Basic abc…
        if isSchemeWord(name) { return credential(afterScheme: end) }
        return end
    }

    /// After a scheme word (`Bearer`, `Basic`, …): whitespace and at least four token characters, or an encoded
    /// space (`Bearer%20abc…` in a URL, `Bearer+abc…` in a form) and a token whose characters may be encoded too
    /// (`%2B`, `%2F`, `%3D`). Redacts the token; returns where the scan goes on: after the token when there is one,
    /// or `end`.
    mutating func credential(afterScheme end: Int) -> Int {
        let k = skipWhitespace(from: end, newlines: false)
        if k > end {
            var valueEnd = k
            while valueEnd < n && isTokenByte(t[valueEnd]) { valueEnd += 1 }
            if valueEnd - k >= 4, !isPlaceholder(k..<valueEnd) {
                replace(k..<valueEnd, with: placeholder)
                return valueEnd
            }
            return end
        }
        var start = end
        while start < n {
            if t[start] == UInt8(ascii: "+") {
                start += 1
            } else if let escape = escape(at: start), escape.byte == UInt8(ascii: " ") {
                start = escape.end
            } else {
                break
            }
        }
        guard start > end else { return end }
        var valueEnd = start
        var characters = 0
        while valueEnd < n {
            if isTokenByte(t[valueEnd]) {
                valueEnd += 1
            } else if let escape = escape(at: valueEnd), isTokenByte(escape.byte) {
                valueEnd = escape.end
            } else {
                break
            }
            characters += 1
        }
        guard characters >= 4, !isPlaceholder(start..<valueEnd) else { return start }
        replace(start..<valueEnd, with: placeholder)
        return valueEnd
    }

    // MARK: Values

    struct QuotedValue {
        /// The characters between the quotes, replaced by the placeholder.
        let content: Range<Int>
        /// Where the scan goes on.
        let resume: Int
    }

    mutating func redactValue(_ value: QuotedValue) {
        guard !value.content.isEmpty, !isPlaceholder(value.content) else { return }
        replace(value.content, with: placeholder)
    }

    /// Whether the word `name` is enclosed in quotes (`"`, `'`, or quotes escaped with backslashes).
    func quotedKey(_ name: Range<Int>) -> (quote: UInt8, backslashes: Int, afterKey: Int)? {
        guard name.lowerBound > 0 else { return nil }
        let quote = t[name.lowerBound - 1]
        guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return nil }
        var backslashes = 0
        while name.lowerBound - 2 - backslashes >= 0 && t[name.lowerBound - 2 - backslashes] == UInt8(ascii: "\\") {
            backslashes += 1
        }
        guard let afterClose = closingQuote(at: name.upperBound, quote: quote, backslashes: backslashes) else {
            return nil
        }
        return (quote, backslashes, afterClose)
    }

    /// The end of `backslashes` backslashes and `quote` at `index`, if they are there.
    func closingQuote(at index: Int, quote: UInt8, backslashes: Int) -> Int? {
        guard index + backslashes < n else { return nil }
        for offset in 0..<backslashes where t[index + offset] != UInt8(ascii: "\\") { return nil }
        return t[index + backslashes] == quote ? index + backslashes + 1 : nil
    }

    /// After a quoted key: optional whitespace and `:`; returns the index after the colon.
    func colon(after index: Int) -> Int? {
        let k = skipWhitespace(from: index, newlines: true)
        return k < n && t[k] == UInt8(ascii: ":") ? k + 1 : nil
    }

    /// After a quoted key's colon: optional whitespace, an optional `Optional(`, and a string quoted the same
    /// way as the key.
    func quotedValue(at index: Int, quote: UInt8, backslashes: Int) -> QuotedValue? {
        let k = skipOptionalWrapper(from: skipWhitespace(from: index, newlines: true))
        for valueQuote in [quote, quote == UInt8(ascii: "\"") ? UInt8(ascii: "'") : UInt8(ascii: "\"")] {
            if let open = closingQuote(at: k, quote: valueQuote, backslashes: backslashes) {
                return quotedString(from: open, quote: valueQuote, backslashes: backslashes)
            }
        }
        return nil
    }

    /// The string that starts at `start` (just after its opening quote), quoted with `backslashes` backslashes
    /// before its quotes: 0 in JSON, 1 in JSON written inside another JSON string, 3 two strings deep (each level
    /// escapes the backslashes and the quote of the one inside: 2 × b + 1). A quote is decided by the run of `r`
    /// backslashes before it: `r − b` of them belong to the value, written at this depth as `(r − b) / (b + 1)`
    /// backslashes of the innermost JSON, where an odd number escapes the quote (it is part of the value) and an
    /// even number ends the string. A run that is not `b` plus a multiple of `b + 1` belongs to an enclosing
    /// string, which ends there, and the value with it. A string the text cuts off runs to the end.
    func quotedString(from start: Int, quote: UInt8, backslashes: Int) -> QuotedValue {
        let backslash = UInt8(ascii: "\\")
        var k = start
        while k < n {
            if t[k] == quote {
                var run = 0
                while k - run > start && t[k - run - 1] == backslash { run += 1 }
                let beyond = run - backslashes
                let isEscaped = beyond > 0 && beyond % (backslashes + 1) == 0 && (beyond / (backslashes + 1)) % 2 == 1
                if !isEscaped {
                    return QuotedValue(content: start..<(k - min(run, backslashes)), resume: k + 1)
                }
            }
            k += 1
        }
        return QuotedValue(content: start..<n, resume: n)
    }

    /// The value of a sensitive parameter: quoted, or up to the next separator (`&`, `#`, whitespace,
    /// punctuation, and when the parameter is `nested` in another's encoded value, a percent-encoded `&`, `#` or
    /// space).
    mutating func redactParameterValue(from start: Int, context: Context, nested: Bool) -> Int {
        guard start < n else { return start }
        if mode == .text && (t[start] == UInt8(ascii: "\"") || t[start] == UInt8(ascii: "'")) {
            let value = quotedString(from: start + 1, quote: t[start], backslashes: 0)
            redactValue(value)
            return value.resume
        }
        var end = start
        while end < n && !endsParameterValue(at: end, context: context, encodedSeparators: nested) { end += 1 }
        if end > start, !isPlaceholder(start..<end) {
            replace(start..<end, with: placeholder)
        }
        // `auth=Bearer abc…`: the value ends at the space, and the token after it is the credential.
        if isSchemeWord(start..<end) { return credential(afterScheme: end) }
        return end
    }

    /// After `name:` or `name =` of a sensitive name: a quoted string (possibly `Optional("…")`), or an
    /// unquoted value up to the next separator unless it is a number or `nil`, `null`, `true`, `false`.
    mutating func redactLooseValue(from index: Int) -> Int {
        let start = skipOptionalWrapper(from: skipWhitespace(from: index, newlines: false))
        guard start < n else { return start }
        if t[start] == UInt8(ascii: "\"") || t[start] == UInt8(ascii: "'") {
            let value = quotedString(from: start + 1, quote: t[start], backslashes: 0)
            redactValue(value)
            return value.resume
        }
        var end = start
        while end < n && !endsParameterValue(at: end, context: .prose, encodedSeparators: true)
            && t[end] != UInt8(ascii: ")")
        {
            end += 1
        }
        let value = start..<end
        if !value.isEmpty, !isPlaceholder(value), !isHarmlessLiteral(value) {
            replace(value, with: placeholder)
        }
        return end
    }

    /// The rest of the line after `Authorization:` and the like.
    mutating func redactLine(from index: Int) -> Int {
        let start = skipWhitespace(from: index, newlines: false)
        var end = start
        while end < n && t[end] != UInt8(ascii: "\n") && t[end] != UInt8(ascii: "\r") { end += 1 }
        if end > start, !isPlaceholder(start..<end) {
            replace(start..<end, with: placeholder)
        }
        return end
    }

    /// Whether the byte at `index` ends an unquoted value; a percent-encoded `&`, `#` or space does only when
    /// `encodedSeparators`.
    func endsParameterValue(at index: Int, context: Context, encodedSeparators: Bool) -> Bool {
        switch t[index] {
        case UInt8(ascii: "&"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"),
            UInt8(ascii: "\r"), UInt8(ascii: "\""), UInt8(ascii: "<"),
            UInt8(ascii: ">"), UInt8(ascii: "\\"):
            return true
        case UInt8(ascii: ";"), UInt8(ascii: ","):
            return mode == .text || context == .prose
        case UInt8(ascii: "/"), UInt8(ascii: "?"):
            return mode == .url && context == .prose
        case UInt8(ascii: "'"), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: "|"):
            return mode == .text
        case UInt8(ascii: "%"):
            guard encodedSeparators, let escape = escape(at: index) else { return false }
            return escape.byte == UInt8(ascii: "&") || escape.byte == UInt8(ascii: "#")
                || escape.byte == UInt8(ascii: " ")
        default:
            return false
        }
    }

    func isHarmlessLiteral(_ range: Range<Int>) -> Bool {
        if range.allSatisfy({ isDigit(t[$0]) || t[$0] == UInt8(ascii: ".") || t[$0] == UInt8(ascii: "-") }) {
            return true
        }
        return RedactionNames.harmlessLiterals.contains { equalsIgnoringCase(range, $0) }
    }

    // MARK: User-info

    /// After a scheme: `://` (or `%3A%2F%2F`) and the user-info up to `@` (or `%40`), if there is an `@`
    /// before the host ends.
    func userInfo(afterScheme index: Int) -> Range<Int>? {
        if index + 3 <= n, t[index] == UInt8(ascii: ":"), t[index + 1] == UInt8(ascii: "/"),
            t[index + 2] == UInt8(ascii: "/")
        {
            // The authority ends at `/`, `?`, `#` or where the URL ends in the text; its last `@` ends the
            // user-info (a password may contain an unencoded `@`).
            let start = index + 3
            var lastAt: Int?
            var k = start
            authority: while k < n {
                switch t[k] {
                case UInt8(ascii: "@"): lastAt = k
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\t"),
                    UInt8(ascii: "\n"), UInt8(ascii: "\r"),
                    UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"):
                    break authority
                default: break
                }
                k += 1
            }
            return lastAt.map { start..<$0 }
        }
        // Percent-encoded: %3A%2F%2F … %40
        guard let colon = escape(at: index), colon.byte == UInt8(ascii: ":"),
            let slash1 = escape(at: colon.end), slash1.byte == UInt8(ascii: "/"),
            let slash2 = escape(at: slash1.end), slash2.byte == UInt8(ascii: "/")
        else { return nil }
        let start = slash2.end
        var k = start
        while k < n {
            switch t[k] {
            case UInt8(ascii: "%"):
                if let escaped = escape(at: k) {
                    switch escaped.byte {
                    case UInt8(ascii: "@"): return start..<k
                    case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "&"):
                        return nil
                    default: k = escaped.end
                    }
                } else {
                    k += 1
                }
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "&"), UInt8(ascii: " "),
                UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"),
                UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"),
                UInt8(ascii: "@"):
                return t[k] == UInt8(ascii: "@") ? start..<k : nil
            default:
                k += 1
            }
        }
        return nil
    }

    var redactedUserInfo: [UInt8] { Array("REDACTED".utf8) }

    // MARK: Names

    /// `=` or a percent-encoded `=` (`%3D`, `%253D`, …) at `index`; returns the index after it.
    func equalsSign(at index: Int) -> Int? {
        if t[index] == UInt8(ascii: "=") { return index + 1 }
        if t[index] == UInt8(ascii: "%"), let escape = escape(at: index), escape.byte == UInt8(ascii: "=") {
            return escape.end
        }
        return nil
    }

    func isSensitiveParameter(_ name: Range<Int>, context: Context) -> Bool {
        let bytes = UnsafeBufferPointer(rebasing: t[name])
        if RedactionNames.containsFragment(bytes) { return true }
        guard RedactionNames.isParameterName(bytes) else { return false }
        if context == .url { return true }
        // In prose, `Code=-1004` is an NSError's field, not an OAuth parameter: parameters are lowercase.
        let hasLowercase = bytes.contains { $0 &- UInt8(ascii: "a") < 26 }
        let hasUppercase = bytes.contains { $0 &- UInt8(ascii: "A") < 26 }
        return !(hasLowercase && hasUppercase)
    }

    func hasSensitiveFragment(_ name: Range<Int>) -> Bool {
        RedactionNames.containsFragment(UnsafeBufferPointer(rebasing: t[name]))
    }

    func isHeaderLineName(_ name: Range<Int>) -> Bool {
        CredentialHeaders.isListed(UnsafeBufferPointer(rebasing: t[name]))
    }

    func isSchemeWord(_ name: Range<Int>) -> Bool {
        name.count >= 5 && name.count <= 6 && RedactionNames.schemeWords.contains { equalsIgnoringCase(name, $0) }
    }

    func isPlaceholder(_ range: Range<Int>) -> Bool {
        equalsIgnoringCase(range, RedactionNames.urlPlaceholder)
            || equalsIgnoringCase(range, RedactionNames.textPlaceholder)
    }

    // MARK: Bytes

    func skipWhitespace(from index: Int, newlines: Bool) -> Int {
        var k = index
        while k < n {
            let byte = t[k]
            guard
                byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
                    || (newlines && (byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")))
            else { break }
            k += 1
        }
        return k
    }

    /// Skips `Optional(`, as Swift prints an optional string.
    func skipOptionalWrapper(from index: Int) -> Int {
        let wrapper = RedactionNames.optionalWrapper
        guard index + wrapper.count <= n, equalsIgnoringCase(index..<(index + wrapper.count), wrapper) else {
            return index
        }
        return index + wrapper.count
    }

    /// A percent-escape at `index`, unwrapping any number of encodings of `%` (`%2526` is `&`).
    func escape(at index: Int) -> (byte: UInt8, end: Int)? {
        // `index` may be the text's end: an escape that ends the text (`scheme%3A`) is followed by none.
        guard index < n, t[index] == UInt8(ascii: "%") else { return nil }
        var k = index + 1
        while k + 3 < n, t[k] == UInt8(ascii: "2"), t[k + 1] == UInt8(ascii: "5"), isHex(t[k + 2]), isHex(t[k + 3]) {
            k += 2
        }
        guard k + 1 < n, let high = hexValue(t[k]), let low = hexValue(t[k + 1]) else { return nil }
        return (high << 4 | low, k + 2)
    }

    func equalsIgnoringCase(_ range: Range<Int>, _ word: [UInt8]) -> Bool {
        guard range.count == word.count else { return false }
        var offset = 0
        for index in range {
            guard t[index].asciiLowercased == word[offset] else { return false }
            offset += 1
        }
        return true
    }
}

// MARK: - Names and bytes

/// The names the rules look for, as lowercase UTF-8, and the byte-level checks on names that
/// ``Redaction/isSensitiveParameter(_:)`` and ``Redaction/isSensitiveHeader(_:)`` share with the scan.
enum RedactionNames {
    static let parameterNames = Redaction.sensitiveParameterNames.map { Array($0.utf8) }
    static let fragments = Redaction.sensitiveNameFragments.map { Array($0.utf8) }
    static let headerLineNames = CredentialHeaders.standard.map { Array($0.utf8) }
    static let schemeWords = ["bearer", "basic", "digest", "token"].map { Array($0.utf8) }
    static let optionalWrapper = Array("optional(".utf8)
    static let harmlessLiterals = ["nil", "null", "true", "false", "none"].map { Array($0.utf8) }
    static let urlPlaceholder = Array("redacted".utf8)
    static let textPlaceholder = Array("<redacted>".utf8)
    static let urlReplacement = Array("REDACTED".utf8)
    static let textReplacement = Array(Redaction.placeholder.utf8)

    /// For each byte, the fragments that start with it (lowercase letters only): most positions of a name
    /// start no fragment and cost one table lookup.
    private static let fragmentsByFirstByte: [[[UInt8]]] = {
        var table = [[[UInt8]]](repeating: [], count: 256)
        for fragment in fragments { table[Int(fragment[0])].append(fragment) }
        return table
    }()

    /// The length of the shortest fragment.
    private static let shortestFragment = fragments.map(\.count).min() ?? 1

    /// Bit `b` is set when a fragment starts with the byte `b` (all fragments start with an ASCII letter).
    private static let fragmentStarts: (UInt64, UInt64) = fragments.reduce((0, 0)) { bits, fragment in
        fragment[0] < 64
            ? (bits.0 | 1 << UInt64(fragment[0]), bits.1) : (bits.0, bits.1 | 1 << UInt64(fragment[0] & 63))
    }

    /// Whether `name` contains one of ``Redaction/sensitiveNameFragments``, ignoring ASCII case.
    static func containsFragment(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let shortest = shortestFragment
        guard name.count >= shortest else { return false }
        let (lowStarts, highStarts) = fragmentStarts
        for start in 0...(name.count - shortest) {
            let first = name[start].asciiLowercased
            let starts = first < 64 ? lowStarts & (1 << UInt64(first)) : highStarts & (1 << UInt64(first & 63))
            guard first < 128, starts != 0 else { continue }
            for fragment in fragmentsByFirstByte[Int(first)] where start + fragment.count <= name.count {
                var offset = 1
                while offset < fragment.count && name[start + offset].asciiLowercased == fragment[offset] {
                    offset += 1
                }
                if offset == fragment.count { return true }
            }
        }
        return false
    }

    /// Whether `name` is one of ``Redaction/sensitiveParameterNames``, ignoring ASCII case.
    static func isParameterName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        parameterNames.contains { equalsIgnoringCase(name, $0) }
    }

    /// Whether `name` is one of ``CredentialHeaders/standard``, ignoring ASCII case.
    static func isHeaderName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        headerLineNames.contains { equalsIgnoringCase(name, $0) }
    }

    static func equalsIgnoringCase(_ name: UnsafeBufferPointer<UInt8>, _ word: [UInt8]) -> Bool {
        guard name.count == word.count else { return false }
        for index in 0..<word.count where name[index].asciiLowercased != word[index] { return false }
        return true
    }
}

@inline(__always) private func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

@inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

/// Letters, digits, `_`, `-` and `.`: what parameter names, JSON keys and header names are made of.
@inline(__always) private func isWordByte(_ byte: UInt8) -> Bool {
    // Bits 45 (-), 46 (.) and 48–57 (digits) of the first word; 65–90, 95 (_) and 97–122 of the second.
    let low: UInt64 = 0x03FF_6000_0000_0000
    let high: UInt64 = 0x07FF_FFFE_87FF_FFFE
    return byte < 64 ? low & (1 << UInt64(byte)) != 0 : byte < 128 && high & (1 << UInt64(byte & 63)) != 0
}

/// The characters of a bearer token (RFC 6750's b64token).
@inline(__always) private func isTokenByte(_ byte: UInt8) -> Bool {
    isWordByte(byte) || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        || byte == UInt8(ascii: "=")
}

@inline(__always) private func isHex(_ byte: UInt8) -> Bool { hexValue(byte) != nil }

@inline(__always) private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
