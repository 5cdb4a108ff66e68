public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Removes secrets from anything Courier prints: URLs, headers, bodies and free text.
///
/// Errors and the logging middleware use it, so that no description or log line contains a credential.
/// Your own middleware can use it too.
///
/// Two kinds of rule apply:
/// - **Known values.** The tokens Courier holds (the token of ``Middleware/authenticating(token:scheme:origins:)``,
///   each token a `tokenProvider` returns, every token of a ``TokenRefresher``) and whatever
///   ``registerSecret(_:)`` is given are replaced wherever they occur, percent-encoded or JSON-escaped too,
///   whatever surrounds them.
/// - **Patterns.** Values in the places credentials are written: sensitive headers, query and form
///   parameters (also nested, percent-encoded, inside another parameter's value), JSON fields, URL user-info
///   and `Bearer`/`Basic` credentials. See ``redactedText(_:)``.
public enum Redaction {
    /// What replaces a secret.
    public static let placeholder = "<redacted>"

    /// Header names whose values are always redacted (compared case-insensitively), in addition to any name
    /// that contains one of the ``sensitiveNameFragments``: ``CredentialHeaders/names``, the one list of
    /// credential headers that the cache and the redirect middleware use too. Add a name with
    /// ``CredentialHeaders/register(_:)``.
    public static var sensitiveHeaderNames: Set<String> {
        CredentialHeaders.names
    }

    /// Query and form parameter names whose values are redacted (compared case-insensitively), in addition
    /// to any name that contains one of the ``sensitiveNameFragments``.
    ///
    /// In free text outside a URL, `code`, `key`, `sig` and `auth` count only when written in lowercase or
    /// uppercase, as parameters are: a capitalised `Code=-1004` is a field of a printed `NSError`.
    public static let sensitiveParameterNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "token", "api_key", "apikey", "key", "password",
        "passwd", "secret", "client_secret", "signature", "sig", "code", "auth",
    ]

    /// Parts of a name that mark its value as a credential, in a header name (`X-Session-Token`), a parameter
    /// name (`auth_token`, `X-Amz-Signature`), a JSON key (`"refreshToken"`) or a field of a printed value
    /// (`password: "…"`). Compared case-insensitively.
    public static let sensitiveNameFragments: Set<String> = [
        "token", "secret", "passw", "apikey", "api_key", "api-key", "session", "sessid", "cookie",
        "authorization", "signature", "private_key", "privatekey",
    ]

    /// The shortest value ``registerSecret(_:)`` accepts, in UTF-8 bytes: 8.
    ///
    /// A shorter string cannot be removed from text by value without wrecking ordinary text (a 4-digit PIN
    /// also occurs in dates, ports and status codes), and 8 random characters of a token already carry
    /// 40–48 bits. Shorter secrets are still covered by the pattern rules.
    public static let minimumSecretLength = SecretRegistry.prefixLength

    /// The longest part of a value that ``registerSecret(_:)`` keeps, in UTF-8 bytes: 16 KiB (request
    /// headers are limited to 8–16 KiB by most servers). A longer value is matched by its first 16 KiB.
    public static let maximumSecretLength = 16 * 1024

    /// How many distinct values ``registerSecret(_:)`` keeps: the 1,024 most recently registered. Registering
    /// a value again makes it recent again.
    ///
    /// The secrets Courier holds itself are kept apart from these, for as long as it holds them, however many
    /// values are registered meanwhile: the token of ``Middleware/authenticating(token:scheme:origins:)`` and the
    /// credential fields of ``Middleware/headers(_:origins:)`` while the middleware exists, the 16 latest distinct
    /// tokens of a `tokenProvider`, a ``TokenRefresher``'s current token and refresh token, an
    /// ``InMemorySharedTokenStore``'s, and what ``pinSecret(_:)`` keeps. They are not counted in this bound: a
    /// process that holds many (a client per tenant, each with its own key) holds them all, and a scan's
    /// prefix filter, sized for about this many values, answers more false positives (more lookups, still
    /// linear in the text).
    public static let maximumRegisteredSecrets = 1024

    /// Remembers `value` as a secret: from now on it is replaced in every text Courier prints (descriptions of
    /// errors, including the texts of underlying errors, log records, redacted URLs and headers), in addition
    /// to the pattern rules.
    ///
    /// Courier registers the tokens it holds itself; call this from your own authentication middleware
    /// for credentials it adds (an API key in a custom header, a signed URL's signature, a client secret; for one
    /// it keeps for its whole life, ``pinSecret(_:)``):
    ///
    /// ```swift
    /// let key = try await vault.apiKey()
    /// Redaction.registerSecret(key)
    /// request.setValue(key, forHTTPHeaderField: "X-Partner-Key")
    /// ```
    ///
    /// Values shorter than ``minimumSecretLength`` bytes are ignored. The most recent
    /// ``maximumRegisteredSecrets`` distinct values are kept; older ones are forgotten (the tokens Courier holds
    /// are not among them: they stay while held). Registering a value
    /// registered recently costs a hash lookup under a shared lock (about 0.2 µs), so it is fine to call for
    /// every request; a new value takes an exclusive lock for a few microseconds. Safe from any thread.
    ///
    /// - Parameter value: The secret, as it is sent. Its percent-encoded and JSON-escaped forms are found too.
    public static func registerSecret(_ value: String) {
        SecretRegistry.shared.register(value)
    }

    /// Registers `value` as ``registerSecret(_:)`` does, and keeps it registered for as long as the returned
    /// value (or a copy of it) exists, however many other values are registered meanwhile.
    ///
    /// For a credential your own middleware holds for its whole life (a static API key): a value only
    /// registered is forgotten after ``maximumRegisteredSecrets`` newer ones (a signature per request gets
    /// there in minutes). Keep the result where the credential is kept, in the middleware's closure:
    ///
    /// ```swift
    /// func partnerKey(_ key: String) -> Middleware {
    ///     let secret = Redaction.pinSecret(key)
    ///     return Middleware(name: "partnerKey") { request, next in
    ///         var request = request
    ///         request.setValue(secret.value, forHTTPHeaderField: "X-Partner-Key")
    ///         return try await next(request)
    ///     }
    /// }
    /// ```
    ///
    /// Once the last copy is gone, the value is an ordinary registration, the most recent one. Values shorter
    /// than ``minimumSecretLength`` bytes are not registered (the result still holds them).
    ///
    /// - Parameter value: The secret, as it is sent.
    /// - Returns: What keeps it registered.
    public static func pinSecret(_ value: String) -> PinnedSecret {
        PinnedSecret(pin: SecretPin(value))
    }

    /// A secret kept registered while this value exists (see ``pinSecret(_:)``). Copies share the registration.
    public struct PinnedSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        let pin: SecretPin

        /// The secret.
        public var value: String { pin.value }

        /// ``Redaction/placeholder``: a pinned secret never prints itself.
        public var description: String { placeholder }

        /// ``Redaction/placeholder``: a pinned secret never prints itself.
        public var debugDescription: String { placeholder }

        /// No children: `dump` shows no secret either.
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    }

    /// Whether values of the header `name` are secret: the same as ``CredentialHeaders/contains(_:)``.
    ///
    /// - Parameter name: A header name, in any case.
    /// - Returns: `true` for `Authorization`, `Cookie`, `Set-Cookie`, `Proxy-Authorization`, the other
    ///   ``sensitiveHeaderNames`` (with those added by ``CredentialHeaders/register(_:)``), and names
    ///   containing one of the ``sensitiveNameFragments`` (`X-Access-Token`).
    public static func isSensitiveHeader(_ name: String) -> Bool {
        CredentialHeaders.contains(name)
    }

    /// Whether values of the query or form parameter `name` are secret.
    ///
    /// - Parameter name: A parameter name, in any case.
    /// - Returns: `true` for the ``sensitiveParameterNames`` and names containing one of the
    ///   ``sensitiveNameFragments`` (`auth_token`, `X-Amz-Signature`).
    public static func isSensitiveParameter(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { RedactionNames.isParameterName($0) || RedactionNames.containsFragment($0) }
    }

    /// Returns `url` as a string with user-info, sensitive query and fragment values, token parameters nested
    /// in other parameters' values (`?next=%2Fcb%3Ftoken%3D…`) and known secrets replaced by `REDACTED`.
    ///
    /// A sensitive parameter's value is replaced up to the next `&` or `#`; the rest of the URL is kept as it
    /// was written.
    ///
    /// - Returns: A string safe to print.
    public static func redactedURL(_ url: URL) -> String {
        redactedURLString(url.absoluteString)
    }

    /// Returns `headers` with the values of sensitive headers redacted, and secrets removed from the others.
    ///
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
    /// The text is redacted *before* the preview is cut, so a value that starts in the preview is replaced
    /// whole however long it is (a 2,000-character `"access_token"`), and a registered secret that starts
    /// in it is found even if it ends far beyond. The work is bounded: at most `4 × limit` bytes plus
    /// ``maximumSecretLength`` are read (a value running past them is replaced up to there), and the rules
    /// stop once the preview is made.
    ///
    /// - Parameters:
    ///   - body: A request or response body.
    ///   - limit: The most characters to keep.
    /// - Returns: A printable preview, ending with `…` when the body goes on; binary bodies (whose first
    ///   `4 × limit` bytes are not UTF-8) are summarised by their size.
    public static func bodyPreview(_ body: Data, limit: Int = 256) -> String {
        let head = body.prefix(limit * 4)
        guard utf8Text(head, cutFromLongerBody: body.count > head.count) != nil else {
            return "<\(body.count) bytes>"
        }
        var window = String(decoding: body.prefix(limit * 4 + maximumSecretLength), as: UTF8.self)
        let (bytes, isWhole) = window.withUTF8 { text -> ([UInt8], Bool) in
            let rules = TextRedactor(mode: .text)
            guard let scrubbed = SecretRegistry.shared.scrub(text, placeholder: rules.placeholder) else {
                return rules.redactedPrefix(text, length: limit * 4)
            }
            return scrubbed.withUnsafeBufferPointer { rules.redactedPrefix($0, length: limit * 4) }
        }
        let redacted = String(decoding: bytes, as: UTF8.self)
        let isCut = !isWhole || body.count > limit * 4 + maximumSecretLength
        if let cut = redacted.index(redacted.startIndex, offsetBy: limit, limitedBy: redacted.endIndex),
            cut < redacted.endIndex || isCut
        {
            return String(redacted[..<cut]) + "…"
        }
        return isCut ? redacted + "…" : redacted
    }

    /// Returns `text` with credentials removed.
    ///
    /// - Known secrets (see ``registerSecret(_:)``) wherever they occur.
    /// - The value of a sensitive parameter (``isSensitiveParameter(_:)``): `name=value` after `?`, `&`, `#`
    ///   (then in any letter case) or elsewhere, with `=` or the separator percent-encoded once or more
    ///   (`%3Faccess_token%3D…`, `%253F…`), so a parameter nested in another one's value is found.
    /// - The value of a JSON or dictionary field whose key contains a ``sensitiveNameFragments`` entry
    ///   (`"refresh_token": "…"`, also with escaped quotes inside another string, and `'…'`), whole even when it
    ///   holds escaped quotes and backslashes, at any depth of escaping; and of such a field in Swift's
    ///   description of a value (`token: "…"`, `password: Optional("…")`, `secret: …`).
    /// - The rest of the line after a ``sensitiveHeaderNames`` entry and `:` or `=` (`Authorization: Basic …`).
    /// - The credential after `Bearer`, `Basic`, `Digest` or `Token` and a space, also an encoded one (`%20`, `+`,
    ///   as in `Bearer%20abc…`).
    /// - URL user-info (`https://user:password@`), also percent-encoded.
    ///
    /// A value cut off by the end of the text is replaced up to the end. The text is read once; nothing is
    /// copied when nothing is found.
    ///
    /// - Parameter text: Free text, such as an underlying error's description.
    /// - Returns: The text, safe to print.
    public static func redactedText(_ text: String) -> String {
        redacted(text, mode: .text)
    }

    /// The known secrets and the pattern rules, applied to a string that holds a URL (`REDACTED`, which a
    /// URL may contain, replaces what is removed).
    static func redactedURLString(_ string: String) -> String {
        redacted(string, mode: .url)
    }

    private static func redacted(_ text: String, mode: TextRedactor.Mode) -> String {
        guard !text.isEmpty else { return text }
        var text = text
        let changed: [UInt8]? = text.withUTF8 { bytes in
            let rules = TextRedactor(mode: mode)
            guard let scrubbed = SecretRegistry.shared.scrub(bytes, placeholder: rules.placeholder) else {
                return rules.redact(bytes)
            }
            return scrubbed.withUnsafeBufferPointer { rules.redact($0) } ?? scrubbed
        }
        return changed.map { String(decoding: $0, as: UTF8.self) } ?? text
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

    /// A header name quoted for messages as it was typed, shortened if it is long. Control characters
    /// (C0, DEL, C1 and the Unicode line and paragraph separators) are written as escapes (`\r`, `\n`,
    /// `\u{0}`), so a name cannot break a log line.
    static func quotedHeaderName(_ name: String) -> String {
        var text = ""
        for scalar in name.unicodeScalars.prefix(64) {
            if scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) || scalar == "\u{2028}"
                || scalar == "\u{2029}"
            {
                text += escapedControl(scalar)
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return "\"" + text + "\""
    }

    /// A control character as a Swift escape: `\r`, `\n`, `\t`, or `\u{1B}`.
    static func escapedControl(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\r": "\\r"
        case "\n": "\\n"
        case "\t": "\\t"
        default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        }
    }
}
