/// One segment of a request's path made from a value you did not write yourself: an identifier a user typed,
/// a file name, a key from another service.
///
/// A path string keeps the meaning of its `/`, `?`, `#` and dot segments, so a value interpolated into it can
/// reach another path (`"../admin"`), add query items (`"42?role=admin"`) or end the path (`"a#b"`). Encoded,
/// the value is one segment and nothing else:
///
/// ```swift
/// let user: User = try await client.send(.get("/users/\(PathSegment.encoded(userID))"))
/// ```
public enum PathSegment {
    /// `value` percent-encoded as one path segment: every byte but the unreserved characters
    /// (`A–Z a–z 0–9 - . _ ~`) is encoded, `%` included, and a value that is `.` or `..` is encoded whole
    /// (`%2E`, `%2E%2E`), so that no dot segment moves the path up.
    ///
    /// - Parameter value: Any text; the empty string stays empty.
    /// - Returns: The segment, to put between two `/` of a path.
    public static func encoded(_ value: String) -> String {
        switch value {
        case ".": "%2E"
        case "..": "%2E%2E"
        default: PercentEncoding.encodeComponent(value)
        }
    }
}
