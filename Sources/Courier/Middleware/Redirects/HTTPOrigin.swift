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

    static func defaultPort(for scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }
}
