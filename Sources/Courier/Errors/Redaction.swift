public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Removes secrets from anything Courier prints: URLs, headers, bodies and free text.
///
/// Errors and the logging middleware use it, so that no description or log line contains a credential.
/// Your own middleware can use it too.
public enum Redaction {
    /// What replaces a secret.
    public static let placeholder = "<redacted>"

    /// Header names whose values are always redacted (compared case-insensitively).
    public static let sensitiveHeaderNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
        "x-auth-token", "x-csrf-token", "x-xsrf-token",
    ]

    /// Query and form parameter names whose values are redacted (compared case-insensitively).
    public static let sensitiveParameterNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "token", "api_key", "apikey", "key", "password",
        "passwd", "secret", "client_secret", "signature", "sig", "code", "auth",
    ]

    /// Whether values of the header `name` are secret.
    ///
    /// - Parameter name: A header name, in any case.
    /// - Returns: `true` for `Authorization`, `Cookie`, `Set-Cookie`, `Proxy-Authorization` and the other
    ///   ``sensitiveHeaderNames``.
    public static func isSensitiveHeader(_ name: String) -> Bool {
        sensitiveHeaderNames.contains(name.lowercased())
    }

    /// Returns `url` as a string with user-info and sensitive query values redacted.
    ///
    /// - Parameter url: Any URL.
    /// - Returns: A string safe to print.
    public static func redactedURL(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return redactedText(url.absoluteString)
        }
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            components.percentEncodedUser = "REDACTED"
            components.percentEncodedPassword = nil
        }
        if let items = components.percentEncodedQueryItems, !items.isEmpty {
            components.percentEncodedQueryItems = items.map { item in
                guard item.value != nil, sensitiveParameterNames.contains(item.name.lowercased()) else { return item }
                return URLQueryItem(name: item.name, value: "REDACTED")
            }
        }
        // OAuth callbacks carry tokens in the fragment (`#access_token=…&state=…`).
        if let fragment = components.percentEncodedFragment, fragment.contains("=") {
            components.percentEncodedFragment = fragment.split(separator: "&", omittingEmptySubsequences: false)
                .map { pair in
                    guard let equals = pair.firstIndex(of: "="),
                        sensitiveParameterNames.contains(pair[..<equals].lowercased())
                    else { return String(pair) }
                    return pair[..<equals] + "=REDACTED"
                }
                .joined(separator: "&")
        }
        return components.string ?? redactedText(url.absoluteString)
    }

    /// Returns `headers` with the values of sensitive headers redacted.
    ///
    /// - Parameter headers: Header names and values.
    /// - Returns: The same headers, safe to print.
    public static func redactedHeaders(_ headers: [String: String]) -> [String: String] {
        var result = headers
        for (name, value) in headers {
            result[name] = isSensitiveHeader(name) ? placeholder : redactedText(value)
        }
        return result
    }

    /// Returns the headers of `response` with the values of sensitive headers redacted.
    ///
    /// - Parameter response: An HTTP response.
    /// - Returns: Its headers, safe to print.
    public static func redactedHeaders(_ response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers[String(describing: name)] = String(describing: value)
        }
        return redactedHeaders(headers)
    }

    /// Returns the start of `body` as text (at most `limit` characters) with secrets redacted.
    ///
    /// - Parameters:
    ///   - body: A request or response body.
    ///   - limit: The most characters to keep.
    /// - Returns: A printable preview; binary bodies are summarised by their size.
    public static func bodyPreview(_ body: Data, limit: Int = 256) -> String {
        let head = body.prefix(limit * 4)
        guard let text = utf8Text(head, cutFromLongerBody: body.count > head.count) else {
            return "<\(body.count) bytes>"
        }
        let redacted = redactedText(text)
        if redacted.count > limit || body.count > head.count {
            return String(redacted.prefix(limit)) + "…"
        }
        return redacted
    }

    /// Returns `text` with credentials removed: bearer and basic tokens, URL user-info, sensitive JSON
    /// fields, sensitive `name=value` parameters and sensitive header lines.
    ///
    /// - Parameter text: Free text, such as an underlying error's description.
    /// - Returns: The text, safe to print.
    public static func redactedText(_ text: String) -> String {
        guard !text.isEmpty else { return text }
        var utf8Text = text
        let applicable = utf8Text.withUTF8 { bytes in
            ruleSources.indices.filter { ruleSources[$0].trigger.matches(bytes) }
        }
        guard !applicable.isEmpty else { return text }
        return rules.withLock { rules in
            var result = text
            for index in applicable {
                guard let rule = rules[index] else { continue }
                result = result.replacing(rule.pattern) { match in
                    let kept = match.output[1].substring.map(String.init) ?? ""
                    return kept + rule.replacement
                }
            }
            return result
        }
    }

    /// The text of `bytes` if they are UTF-8; when they were cut from a longer body, a character split at
    /// the cut (up to three bytes) is dropped.
    private static func utf8Text(_ bytes: Data, cutFromLongerBody: Bool) -> String? {
        if let text = String(data: bytes, encoding: .utf8) { return text }
        guard cutFromLongerBody else { return nil }
        for dropped in 1...3 where bytes.count > dropped {
            if let text = String(data: bytes.dropLast(dropped), encoding: .utf8) { return text }
        }
        return nil
    }

    /// A header name quoted for messages, shortened if it is long.
    static func quotedHeaderName(_ name: String) -> String {
        let printable = name.unicodeScalars.map { $0.properties.isWhitespace || $0.value < 0x20 ? "?" : String($0) }
        return "\"" + String(printable.joined().prefix(64)) + "\""
    }

    private struct Rule {
        let pattern: Regex<AnyRegexOutput>
        let replacement: String
    }

    /// A cheap check: a rule's pattern can only match text that contains (ignoring ASCII case) every string
    /// of `all` and at least one of `any`. Most text (content types, dates, messages) passes no trigger and
    /// is returned without running a regular expression.
    private struct Trigger: Sendable {
        let all: [[UInt8]]
        let any: [[UInt8]]

        /// - Parameters:
        ///   - all: Lowercase ASCII strings that must all be present.
        ///   - any: Lowercase ASCII strings of which one must be present.
        init(all: [String], any: [String]) {
            self.all = all.map { Array($0.utf8) }
            self.any = any.map { Array($0.utf8) }
        }

        func matches(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
            all.allSatisfy { Self.find($0, in: text) } && any.contains { Self.find($0, in: text) }
        }

        /// Whether `needle` (lowercase ASCII) occurs in `text`, ignoring ASCII case.
        private static func find(_ needle: [UInt8], in text: UnsafeBufferPointer<UInt8>) -> Bool {
            guard !needle.isEmpty, needle.count <= text.count else { return needle.isEmpty }
            candidates: for start in 0...(text.count - needle.count) {
                for offset in 0..<needle.count where lowercased(text[start + offset]) != needle[offset] {
                    continue candidates
                }
                return true
            }
            return false
        }

        private static func lowercased(_ byte: UInt8) -> UInt8 {
            byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
        }
    }

    private struct RuleSource: Sendable {
        /// A regular expression whose first capture group is kept; the rest of the match is replaced.
        let pattern: String
        let replacement: String
        let trigger: Trigger
    }

    private static let ruleSources: [RuleSource] = {
        let sensitiveKeys =
            "[A-Za-z0-9_-]*(?:token|secret|password|passwd|authorization|cookie|api[_-]?key|session)[A-Za-z0-9_-]*"
        let parameters = sensitiveParameterNames.sorted()
        return [
            RuleSource(
                pattern: #"(?i)(\b(?:proxy-authorization|authorization|set-cookie|cookie)\s*[:=]\s*)[^\r\n]+"#,
                replacement: placeholder,
                trigger: Trigger(all: [], any: ["authorization", "cookie"])
            ),
            RuleSource(
                pattern: #"(?i)(\b(?:bearer|basic|digest|token)\s+)[A-Za-z0-9\-._~+/=]{4,}"#,
                replacement: placeholder,
                trigger: Trigger(all: [], any: ["bearer", "basic", "digest", "token"])
            ),
            RuleSource(
                pattern: #"(?i)([a-z][a-z0-9+.\-]*://)[^/\s@]+@"#,
                replacement: "REDACTED@",
                trigger: Trigger(all: ["://"], any: ["@"])
            ),
            RuleSource(
                pattern: #"(?i)("\#(sensitiveKeys)"\s*:\s*)"(?:[^"\\]|\\.)*""#,
                replacement: "\"\(placeholder)\"",
                trigger: Trigger(
                    all: ["\""],
                    any: ["token", "secret", "passw", "authorization", "cookie", "key", "session"]
                )
            ),
            RuleSource(
                pattern: #"(?i)((?:^|[?&\s;,])(?:\#(parameters.joined(separator: "|")))=)[^&\s#";,]+"#,
                replacement: placeholder,
                trigger: Trigger(all: ["="], any: parameters)
            ),
        ]
    }()

    /// The compiled rules, one per source (`nil` if a pattern did not compile). Compiling takes milliseconds,
    /// so it happens once; `Regex` is not `Sendable`, so this mutex guards every use of them.
    private static let rules = LockedState<[Rule?]>(
        ruleSources.map { source in
            (try? Regex(source.pattern)).map { Rule(pattern: $0, replacement: source.replacement) }
        }
    )
}
