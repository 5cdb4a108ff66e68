/// An HTTP request method, such as `GET` or `POST`.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's name as sent on the wire, for example `"GET"`.
    public let rawValue: String

    /// Creates a method from its name; the name is uppercased.
    ///
    /// - Parameter rawValue: The method's name, for example `"PATCH"`.
    public init(rawValue: String) {
        self.rawValue = rawValue.uppercased()
    }

    /// Creates a method from a string literal such as `"PROPFIND"`.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// `GET`
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    /// `TRACE`
    public static let trace = HTTPMethod(rawValue: "TRACE")

    /// Whether sending the request twice has the same effect as sending it once (RFC 9110 §9.2.2):
    /// `GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT` and `DELETE`.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE": return true
        default: return false
        }
    }

    /// The method's name.
    public var description: String { rawValue }
}
