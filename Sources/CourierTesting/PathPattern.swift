import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A URL path pattern such as `/users/:id/posts/*` or `/files/**`, matched segment by segment.
///
/// - `:name` matches one segment and captures it (percent-decoded) as the parameter `name`;
/// - `*` matches any one segment;
/// - `**` as the last segment matches the rest of the path, including nothing;
/// - any other segment matches itself exactly (compared percent-decoded).
///
/// Empty segments are ignored, so `/users/` and `/users` are the same path.
struct PathPattern: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
        case wildcard
        case rest
    }

    let text: String
    let segments: [Segment]

    init(_ text: String) {
        self.text = text
        let parts = Self.split(text)
        var segments: [Segment] = []
        for (index, part) in parts.enumerated() {
            if part == "**", index == parts.count - 1 {
                segments.append(.rest)
            } else if part == "*" {
                segments.append(.wildcard)
            } else if part.hasPrefix(":"), part.count > 1 {
                segments.append(.parameter(String(part.dropFirst())))
            } else {
                segments.append(.literal(part.removingPercentEncoding ?? part))
            }
        }
        self.segments = segments
    }

    var description: String { text }

    /// The captured parameters when `url`'s path matches, or `nil`.
    func match(_ url: URL?) -> [String: String]? {
        guard let url else { return nil }
        let encoded = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return match(path: encoded)
    }

    /// The captured parameters when the percent-encoded `path` matches, or `nil`.
    func match(path: String) -> [String: String]? {
        let parts = Self.split(path).map { $0.removingPercentEncoding ?? $0 }
        var parameters: [String: String] = [:]
        var index = 0
        for segment in segments {
            switch segment {
            case .rest:
                return parameters
            case .wildcard:
                guard index < parts.count else { return nil }
            case .parameter(let name):
                guard index < parts.count else { return nil }
                parameters[name] = parts[index]
            case .literal(let literal):
                guard index < parts.count, parts[index] == literal else { return nil }
            }
            index += 1
        }
        return index == parts.count ? parameters : nil
    }

    private static func split(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}
