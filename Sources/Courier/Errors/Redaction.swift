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
        guard let text = String(data: head, encoding: .utf8) ?? String(data: head.dropLast(3), encoding: .utf8)
        else {
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
        var result = text
        for rule in rules {
            result = result.replacing(rule.pattern) { match in
                let kept = match.output[1].substring.map(String.init) ?? ""
                return kept + rule.replacement
            }
        }
        return result
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

    private static var rules: [Rule] {
        // Each pattern's first capture group is kept; the rest of the match is replaced.
        let sensitiveKeys =
            "[A-Za-z0-9_-]*(?:token|secret|password|passwd|authorization|cookie|api[_-]?key|session)[A-Za-z0-9_-]*"
        let parameters = sensitiveParameterNames.sorted().joined(separator: "|")
        let sources: [(String, String)] = [
            (#"(?i)(\b(?:proxy-authorization|authorization|set-cookie|cookie)\s*[:=]\s*)[^\r\n]+"#, placeholder),
            (#"(?i)(\b(?:bearer|basic|digest|token)\s+)[A-Za-z0-9\-._~+/=]{4,}"#, placeholder),
            (#"(?i)([a-z][a-z0-9+.\-]*://)[^/\s@]+@"#, "REDACTED@"),
            (#"(?i)("\#(sensitiveKeys)"\s*:\s*)"(?:[^"\\]|\\.)*""#, "\"\(placeholder)\""),
            (#"(?i)((?:^|[?&\s;,])(?:\#(parameters))=)[^&\s#";,]+"#, placeholder),
        ]
        return sources.compactMap { source, replacement in
            guard let pattern = try? Regex(source) else { return nil }
            return Rule(pattern: pattern, replacement: replacement)
        }
    }
}
