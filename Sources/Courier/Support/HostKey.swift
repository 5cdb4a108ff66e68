import Foundation

/// What the per-host flow control (concurrency limits, circuit breakers) groups requests by: the URL's
/// host, lowercased, and its port (the scheme's default port when none is given), for example
/// `api.example.com:443`. User-info, path and query are not part of it.
enum HostKey {
    /// Returns the key for `url`, or `""` for a URL without a host.
    ///
    /// - Parameter url: A request's URL.
    /// - Returns: `host:port`, or `""`.
    static func of(_ url: URL?) -> String {
        guard let url, let host = url.host, !host.isEmpty else { return "" }
        let port: Int
        if let explicit = url.port {
            port = explicit
        } else {
            switch url.scheme?.lowercased() {
            case "http", "ws": port = 80
            case "https", "wss": port = 443
            default: port = 0
            }
        }
        return "\(host.lowercased()):\(port)"
    }
}
