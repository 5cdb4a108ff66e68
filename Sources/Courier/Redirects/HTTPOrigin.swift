import Foundation

/// The origin of a URL (RFC 6454): scheme, host and port, with the scheme's default port filled in.
struct HTTPOrigin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int?

    /// The origin of `url`, or `nil` when it has no scheme or no host.
    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? Self.defaultPort(for: scheme)
    }

    /// Whether `url` has this origin: the same scheme and host, ignoring ASCII case, and the same port (the
    /// scheme's default when `url` names none). Allocates nothing for a host of up to 15 bytes.
    func matches(_ url: URL) -> Bool {
        guard let otherScheme = url.scheme, Self.equalsLowercased(otherScheme, scheme),
            let otherHost = url.host, Self.equalsLowercased(otherHost, host)
        else { return false }
        return (url.port ?? Self.defaultPort(for: scheme)) == port
    }

    /// Whether `text` is `lowercased` but for the case of its ASCII letters. Compared in the strings' storage when
    /// both have it contiguous (a `zip` of their UTF-8 views cost about 60 instructions a byte).
    static func equalsLowercased(_ text: String, _ lowercased: String) -> Bool {
        guard text.utf8.count == lowercased.utf8.count else { return false }
        let compared = text.utf8.withContiguousStorageIfAvailable { bytes in
            lowercased.utf8.withContiguousStorageIfAvailable { expected in
                for index in bytes.indices {
                    let byte = bytes[index]
                    let folded = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                    if folded != expected[index] { return false }
                }
                return true
            }
        }
        if case .some(.some(let isEqual)) = compared { return isEqual }
        return equalsLowercasedByViews(text, lowercased)
    }

    /// ``equalsLowercased(_:_:)`` through the UTF-8 views.
    static func equalsLowercasedByViews(_ text: String, _ lowercased: String) -> Bool {
        guard text.utf8.count == lowercased.utf8.count else { return false }
        for (byte, expected) in zip(text.utf8, lowercased.utf8) {
            let folded = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
            if folded != expected { return false }
        }
        return true
    }

    static func defaultPort(for scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    /// Whether `url` and `other` name the same resource: the same origin, path (an empty path is `/`)
    /// and query. Transports may hand back a response URL spelled a little differently from the request's.
    static func isSameResource(_ url: URL, _ other: URL?) -> Bool {
        guard let other else { return false }
        if url == other { return true }
        guard HTTPOrigin(url) == HTTPOrigin(other) else { return false }
        let path = url.path.isEmpty ? "/" : url.path
        let otherPath = other.path.isEmpty ? "/" : other.path
        return path == otherPath && url.query == other.query
    }
}
