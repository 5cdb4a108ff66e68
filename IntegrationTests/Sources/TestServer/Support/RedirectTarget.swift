import Foundation

/// Where a redirect may point: a path on the same origin, or an absolute `http` URL on
/// `127.0.0.1`. Anything else is refused, so a test server never sends a client off the machine.
enum RedirectTarget {
    /// The `Location` value for `target`, or `nil` if the target is not allowed.
    static func location(for target: String) -> String? {
        if target.hasPrefix("/") {
            // `//host/path` is a scheme-relative reference to another host.
            return target.hasPrefix("//") ? nil : target
        }
        guard
            let components = URLComponents(string: target),
            components.scheme?.lowercased() == "http",
            components.host == "127.0.0.1",
            components.user == nil,
            components.password == nil
        else {
            return nil
        }
        return target
    }
}
