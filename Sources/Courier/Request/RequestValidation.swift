#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// Checks that a request can be sent safely: an absolute URL, a method and header names that are RFC 9110
/// tokens, and header values without CR, LF or NUL (which would let a value inject headers or split the
/// request).
///
/// Typed ``Request``s are checked when they are built. Transports check every request just before it
/// would reach the wire — ``URLSessionTransport``, the AsyncHTTPClient transport and the test transports
/// in `CourierTesting` all do — so a bad header added by a middleware is refused too. The check is not
/// part of the middleware chain itself because it costs several times a whole in-memory round trip; a
/// transport of your own should call ``validate(_:)`` first.
public enum RequestValidation {
    /// Throws unless `request` can be sent safely.
    ///
    /// - Throws: ``CourierError`` with code ``CourierError/Code/invalidRequest`` for a request without an
    ///   absolute URL, a method or header name that is not an RFC 9110 token, or a header value containing
    ///   CR, LF or NUL.
    public static func validate(_ request: URLRequest) throws {
        _ = try validatedURL(of: request)
        if let method = request.httpMethod {
            try validateMethod(method, request: request)
        }
        guard let fields = request.allHTTPHeaderFields, !fields.isEmpty else { return }
        for (name, value) in fields {
            try validateHeader(name: name, value: value, request: request)
        }
    }

    /// Returns the URL of `request`, or throws ``CourierError/Code/invalidRequest`` when it has none or it is
    /// not absolute (no scheme or no host).
    ///
    /// A transport that converts the headers itself calls this, ``validateMethod(_:request:)`` and
    /// ``validateHeader(name:value:request:)`` while converting, instead of ``validate(_:)`` first: the
    /// same checks, with one pass over the headers instead of two.
    static func validatedURL(of request: URLRequest) throws -> URL {
        guard let url = request.url else {
            throw CourierError.invalidRequest("the request has no URL", request: request)
        }
        guard isAbsolute(url) else {
            throw CourierError.invalidRequest(
                "the URL is not absolute (it needs a scheme and a host)",
                request: request
            )
        }
        return url
    }

    /// Whether `url` has a scheme and a host: `url.scheme != nil && url.host != nil`, without percent-decoding the
    /// host (`URL.host` decodes it on every call, about 1,100 instructions of a call over AsyncHTTPClient). A host
    /// still percent-encoded has no `%` unless decoding it could fail, so only such a host takes `URL.host`.
    static func isAbsolute(_ url: URL) -> Bool {
        guard url.scheme != nil, let encoded = url.host(percentEncoded: true) else { return false }
        return !encoded.utf8.contains(UInt8(ascii: "%")) || url.host != nil
    }

    /// Throws ``CourierError/Code/invalidRequest`` unless `method` is a token. A method is written as it is
    /// into the request line, so one with a space, CR or LF would let it rewrite the request or smuggle
    /// another one. The message never contains the method.
    static func validateMethod(_ method: String, request: URLRequest? = nil) throws {
        guard isToken(method) else {
            throw CourierError.invalidRequest("the method is not a valid HTTP token", request: request)
        }
    }

    /// The method of `request` to show in errors and logs: the method, or a placeholder when it is not a token
    /// (a method with CR or LF in it would otherwise forge lines in a log).
    static func printableMethod(of request: URLRequest) -> String {
        printableMethod(request.httpMethod ?? "GET")
    }

    /// `method`, or a placeholder when it is not a token.
    static func printableMethod(_ method: String) -> String {
        isToken(method) ? method : "<invalid method>"
    }

    /// Throws ``CourierError/Code/invalidRequest`` unless `name` is a token and `value` has no CR, LF or NUL.
    static func validateHeader(name: String, value: String, request: URLRequest? = nil) throws {
        guard isToken(name) else {
            throw CourierError.invalidRequest(invalidNameMessage(name), request: request)
        }
        guard !containsLineBreakOrNUL(value) else {
            throw CourierError.invalidRequest(
                "the value of header \(Redaction.quotedHeaderName(name)) contains CR, LF or NUL",
                request: request
            )
        }
    }

    /// Why `name` is not a valid header name, with the name as typed and its first character that may not
    /// be in a token: `the header name "Bad Header" is not a valid HTTP token (it contains a space)`.
    static func invalidNameMessage(_ name: String) -> String {
        guard !name.isEmpty else { return "the header name is empty" }
        let quoted = Redaction.quotedHeaderName(name)
        guard let offending = name.unicodeScalars.first(where: { !$0.isASCII || !isTokenCharacter(UInt8($0.value)) })
        else { return "the header name \(quoted) is not a valid HTTP token" }
        return "the header name \(quoted) is not a valid HTTP token (it contains \(describe(offending)))"
    }

    /// A character that may not be in a token, in words: `a space`, `a carriage return (\r)`, `":"`,
    /// `"Ü" (U+00DC), which is not ASCII`.
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case " ": return "a space"
        case "\t": return "a tab (\\t)"
        case "\r": return "a carriage return (\\r)"
        case "\n": return "a line feed (\\n)"
        case "\u{0}": return "a NUL (\\u{0})"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                return "a control character (\(Redaction.escapedControl(scalar)))"
            }
            if scalar.isASCII { return "\"\(scalar)\"" }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let code = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            return "\(Redaction.quotedHeaderName(String(scalar))) (U+\(code)), which is not ASCII"
        }
    }

    /// Whether `string` is an RFC 9110 `token`: one or more `tchar`.
    ///
    /// Every header name and value of every request is scanned, so the scans run over the string's
    /// contiguous UTF-8 when it has it (a native string does): about ten times fewer instructions than
    /// iterating its `utf8` view.
    static func isToken(_ string: String) -> Bool {
        if let isToken = string.utf8.withContiguousStorageIfAvailable({ bytes in
            !bytes.isEmpty && bytes.allSatisfy(isTokenCharacter)
        }) {
            return isToken
        }
        return !string.isEmpty && string.utf8.allSatisfy(isTokenCharacter)
    }

    /// Whether `value` contains CR, LF or NUL.
    private static func containsLineBreakOrNUL(_ value: String) -> Bool {
        if let contains = value.utf8.withContiguousStorageIfAvailable({ bytes in
            bytes.contains(where: isLineBreakOrNUL)
        }) {
            return contains
        }
        return value.utf8.contains(where: isLineBreakOrNUL)
    }

    private static func isLineBreakOrNUL(_ byte: UInt8) -> Bool {
        byte == 0x0D || byte == 0x0A || byte == 0x00
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
