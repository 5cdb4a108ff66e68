import Foundation

/// Percent-encoding per RFC 3986, as Courier applies it to paths, query strings and form bodies.
enum PercentEncoding {
    /// `unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"`
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// `sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`
    static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    /// Encodes a query or form component: only unreserved characters stay as they are.
    static func encodeComponent(_ string: String) -> String {
        encode(string) { isUnreserved($0) }
    }

    /// Encodes a path: `pchar` and `/` stay; an existing `%XX` escape is kept.
    static func encodePath(_ string: String) -> String {
        encode(string, keepingEscapes: true) {
            isUnreserved($0) || isSubDelimiter($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "@")
                || $0 == UInt8(ascii: "/")
        }
    }

    /// Encodes a query string a caller wrote by hand: query characters stay, an existing `%XX` is kept.
    static func encodeQueryString(_ string: String) -> String {
        encode(string, keepingEscapes: true) {
            isUnreserved($0) || isSubDelimiter($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "@")
                || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?")
        }
    }

    /// `name=value&name=value`, each part encoded with ``encodeComponent(_:)``; a `nil` value is `name`.
    static func formEncoded(_ items: [URLQueryItem]) -> String {
        items.map { item in
            let name = encodeComponent(item.name)
            guard let value = item.value else { return name }
            return name + "=" + encodeComponent(value)
        }.joined(separator: "&")
    }

    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func encode(_ string: String, keepingEscapes: Bool = false, keep: (UInt8) -> Bool) -> String {
        let bytes = Array(string.utf8)
        if bytes.allSatisfy(keep) { return string }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 3)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if keep(byte) {
                output.append(byte)
            } else if keepingEscapes, byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2])
            {
                output.append(contentsOf: bytes[index...(index + 2)])
                index += 2
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            return true
        default:
            return false
        }
    }
}
