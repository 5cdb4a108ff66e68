import Foundation

/// The origin of a URL (RFC 6454): scheme, host and port, with the scheme's default port filled in.
struct HTTPOrigin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int?
    /// Whether ``matches(_:)`` may answer from a URL's text: the scheme is ASCII letters, the host ASCII letters,
    /// digits, `-` and `.` (not an IPv6 address or a percent-encoded name), and the port is known.
    private let isPlain: Bool

    /// The origin of `url`, or `nil` when it has no scheme or no host.
    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        let port = url.port ?? Self.defaultPort(for: scheme)
        self.scheme = scheme
        self.host = host
        self.port = port
        let plainHost = host.utf8.allSatisfy { byte in
            byte &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
        }
        isPlain = plainHost && scheme.utf8.allSatisfy { $0 &- UInt8(ascii: "a") < 26 } && port != nil
    }

    /// Whether `url` has this origin: the same scheme and host, ignoring ASCII case, and the same port (the
    /// scheme's default when `url` names none).
    ///
    /// A URL whose text begins with this origin's lowercase `scheme://host`, then `:port` unless the port is the
    /// scheme's default (digits without a leading zero), then `/`, `?`, `#` or nothing, has it, as RFC 3986 parses
    /// it: its authority is exactly that host and port, with no user info (which needs an `@` before the first
    /// `/`). That is one comparison of bytes, allocating nothing; Foundation's `host`, which percent-decodes the
    /// name, cost about 1,100 instructions. Any other text (another case, an explicit default port, user info,
    /// another origin) is judged by its components, as ``matchesByComponents(_:)``.
    func matches(_ url: URL) -> Bool {
        if isPlain, beginsURL(url.absoluteString) { return true }
        return matchesByComponents(url)
    }

    /// Whether `text` begins with this origin as ``matches(_:)`` describes.
    private func beginsURL(_ text: String) -> Bool {
        let begins = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            var index = 0
            func take(_ expected: String) -> Bool {
                for byte in expected.utf8 {
                    guard index < bytes.count, bytes[index] == byte else { return false }
                    index += 1
                }
                return true
            }
            guard take(scheme), take("://"), take(host) else { return false }
            if let port, port != Self.defaultPort(for: scheme) {
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                let first = index
                var value = 0
                while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10, index - first < 6 {
                    value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                    index += 1
                }
                guard index > first, bytes[first] != UInt8(ascii: "0"), value == port else { return false }
            }
            guard index < bytes.count else { return true }
            let next = bytes[index]
            return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
        }
        return begins ?? false
    }

    /// ``matches(_:)`` by the URL's scheme, host and port, as Foundation parses them.
    func matchesByComponents(_ url: URL) -> Bool {
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
                    if bytes[index].asciiLowercased != expected[index] { return false }
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
            if byte.asciiLowercased != expected { return false }
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
