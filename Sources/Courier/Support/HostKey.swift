import Foundation

/// What the per-host flow control (concurrency limits, circuit breakers) groups requests by: the URL's
/// host, lowercased, and its port (the scheme's default port when none is given), for example
/// `api.example.com:443`. User-info, path and query are not part of it.
enum HostKey {
    /// Returns the key for `url`, or `""` for a URL without a host.
    ///
    /// A URL whose authority is a plain host name or IPv4 address with an optional port (the usual case) is read
    /// from its text in one pass over the bytes, ``plainKey(_:)``; any other (user info, percent-encoding, an IPv6
    /// literal, an unusual port) is read by Foundation, ``foundationKey(_:)``. Both give the same key: Foundation's
    /// `host` and `port` on Linux cost ≈ 1,500 instructions, more than the rest of a rate-limited call.
    ///
    /// - Parameter url: A request's URL.
    /// - Returns: `host:port`, or `""`.
    static func of(_ url: URL?) -> String {
        guard let url else { return "" }
        return plainKey(url.absoluteString) ?? foundationKey(url)
    }

    /// The key as Foundation reads the URL: its `host`, `port` and `scheme`.
    static func foundationKey(_ url: URL) -> String {
        guard let host = url.host, !host.isEmpty else { return "" }
        let port: Int
        if let explicit = url.port {
            port = explicit
        } else {
            port = defaultPort(scheme: url.scheme?.lowercased())
        }
        return "\(host.lowercased()):\(port)"
    }

    /// The key of an absolute URL's text `scheme://host[:port][/?#…]` whose host has only ASCII letters, digits,
    /// dots and hyphens and whose port, when given, is 1 to 65535 written without leading zeros; `nil` for any
    /// other text (Foundation reads those).
    static func plainKey(_ text: String) -> String? {
        plain(text)?.key
    }

    /// ``plainKey(_:)``, and the length in bytes of the text's origin, `scheme://host[:port]`: any text that starts
    /// with those bytes followed by "/", "?", "#" or nothing has the same key (``hasOrigin(_:_:)``).
    static func plain(_ text: String) -> (key: String, originLength: Int)? {
        var text = text
        return text.withUTF8 { bytes -> (key: String, originLength: Int)? in
            let count = bytes.count
            // The scheme: a letter, then letters, digits, "+", "-" or ".", then "://".
            guard count > 0, isLetter(bytes[0]) else { return nil }
            var index = 1
            while index < count, isSchemeByte(bytes[index]) { index += 1 }
            let schemeEnd = index
            guard index + 2 < count, bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"),
                bytes[index + 2] == UInt8(ascii: "/")
            else { return nil }
            // The host.
            index += 3
            let hostStart = index
            while index < count, isHostByte(bytes[index]) { index += 1 }
            let hostEnd = index
            guard hostEnd > hostStart else { return nil }
            // The port: digits after ":".
            var portStart = index
            if index < count, bytes[index] == UInt8(ascii: ":") {
                index += 1
                portStart = index
                var value = 0
                while index < count, index - portStart < 6, isDigit(bytes[index]) {
                    value = value &* 10 &+ Int(bytes[index] &- UInt8(ascii: "0"))
                    index += 1
                }
                guard index > portStart, bytes[portStart] != UInt8(ascii: "0"), value <= 65_535 else { return nil }
            }
            let portEnd = index
            // Then the end of the authority.
            if index < count {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") else {
                    return nil
                }
            }
            let hostCount = hostEnd - hostStart
            let portCount = portEnd - portStart
            let schemePort = portCount > 0 ? 0 : defaultPort(scheme: UnsafeBufferPointer(rebasing: bytes[..<schemeEnd]))
            let length = hostCount + 1 + (portCount > 0 ? portCount : schemePort == 0 ? 1 : schemePort == 80 ? 2 : 3)
            let key = String(unsafeUninitializedCapacity: length) { key in
                // Every host byte is a letter, a digit, "." or "-": setting 0x20 lowercases the letters and keeps the rest.
                for offset in 0..<hostCount { key[offset] = bytes[hostStart + offset] | 0x20 }
                key[hostCount] = UInt8(ascii: ":")
                if portCount > 0 {
                    for offset in 0..<portCount { key[hostCount + 1 + offset] = bytes[portStart + offset] }
                } else {
                    var digits = schemePort
                    for offset in (hostCount + 1..<length).reversed() {
                        key[offset] = UInt8(ascii: "0") &+ UInt8(digits % 10)
                        digits /= 10
                    }
                }
                return length
            }
            return (key, portEnd)
        }
    }

    /// Whether `text` starts with `origin` (the first ``plain(_:)``'s `originLength` bytes of a URL's text) followed
    /// by "/", "?", "#" or nothing: then its key is that URL's.
    static func hasOrigin(_ text: String, _ origin: String) -> Bool {
        let matches = text.utf8.withContiguousStorageIfAvailable { text in
            origin.utf8.withContiguousStorageIfAvailable { origin in
                guard text.count >= origin.count, let textStart = text.baseAddress,
                    let originStart = origin.baseAddress,
                    memcmp(textStart, originStart, origin.count) == 0
                else { return false }
                guard text.count > origin.count else { return true }
                let next = text[origin.count]
                return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
            }
        }
        return matches == true
    }

    /// The port of a scheme, lowercased: 80 for `http` and `ws`, 443 for `https` and `wss`, 0 for any other.
    private static func defaultPort(scheme: String?) -> Int {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: 0
        }
    }

    /// ``defaultPort(scheme:)`` of a scheme's bytes, in any case.
    private static func defaultPort(scheme: UnsafeBufferPointer<UInt8>) -> Int {
        func matches(_ name: StaticString) -> Bool {
            name.utf8CodeUnitCount == scheme.count
                && name.withUTF8Buffer { name in zip(name, scheme).allSatisfy { $0 == $1 | 0x20 } }
        }
        if matches("http") || matches("ws") { return 80 }
        if matches("https") || matches("wss") { return 443 }
        return 0
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// A letter, a digit, "+", "-" or ".".
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    /// A letter, a digit, "-" or ".".
    private static func isHostByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}
