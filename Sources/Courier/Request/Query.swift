public import Foundation

/// Query items written as a literal: `["q": "a b", "tag": ["x", "y"], "page": 2, "flag": nil]`.
///
/// A value can be a literal or a variable of any ``QueryValueConvertible`` type: `String`, `Int` (and the
/// other integer types), `Bool` (`true`/`false`), `Double`, `Float`, `Decimal`, `UUID`, or an array of them.
/// A type of your own that prints itself conforms with one line: `extension OrderID: QueryValueConvertible {}`.
///
/// ```swift
/// let user: User = try await client.send(.get("/users", query: ["id": id, "active": isActive]))
/// ```
///
/// An array becomes a repeated key (`tag=x&tag=y`); `nil` (a literal or an optional that is `nil`) becomes
/// a bare key (`flag`). Items keep the order they are written in. See ``Request`` for how they are
/// percent-encoded.
public struct Query: Sendable, Hashable, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    /// A value in a query literal: any ``QueryValueConvertible`` value, or `nil` for a bare key.
    public typealias Value = (any QueryValueConvertible)?

    /// The items, in order.
    public var items: [URLQueryItem]

    /// Creates a query from items.
    public init(_ items: [URLQueryItem]) {
        self.items = items
    }

    /// Creates a query from a dictionary literal, keeping its order.
    public init(dictionaryLiteral elements: (String, Value)...) {
        items = elements.flatMap { name, value in
            (value?.queryValue.values ?? [nil]).map { URLQueryItem(name: name, value: $0) }
        }
    }

    /// Creates a query from items written as an array literal.
    public init(arrayLiteral elements: URLQueryItem...) {
        items = elements
    }
}

/// What a ``QueryValueConvertible`` value sends: one value, a list of them (a repeated key), or nothing (a bare
/// key).
public struct QueryValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByNilLiteral, ExpressibleByBooleanLiteral
{
    let values: [String?]

    /// A single string.
    public init(stringLiteral value: String) { values = [value] }
    /// A single integer.
    public init(integerLiteral value: Int) { values = [String(value)] }
    /// A boolean, sent as `true` or `false`.
    public init(booleanLiteral value: Bool) { values = [String(value)] }
    /// A list, sent as a repeated key.
    public init(arrayLiteral elements: String...) { values = elements }
    /// No value: a bare key.
    public init(nilLiteral: ()) { values = [nil] }
    /// Any value that prints itself, such as a number or a UUID.
    public init(_ value: some CustomStringConvertible) { values = [value.description] }
    /// A list of values, sent as a repeated key.
    public init(_ values: [String]) { self.values = values }
    init(values: [String?]) { self.values = values }
}

/// A value that can be written in a ``Query`` literal: `["id": id]`.
///
/// A type that is `CustomStringConvertible` conforms with an empty extension and is sent as its
/// `description`:
///
/// ```swift
/// extension OrderID: QueryValueConvertible {}
/// ```
public protocol QueryValueConvertible: Sendable {
    /// The value (or values, sent as a repeated key) to send.
    var queryValue: QueryValue { get }
}

extension QueryValueConvertible where Self: CustomStringConvertible {
    /// The `description`.
    public var queryValue: QueryValue { QueryValue(self) }
}

extension QueryValue: QueryValueConvertible {
    /// The value itself.
    public var queryValue: QueryValue { self }
}

extension Array: QueryValueConvertible where Element: QueryValueConvertible {
    /// The elements' values, sent as a repeated key.
    public var queryValue: QueryValue { QueryValue(values: flatMap(\.queryValue.values)) }
}

extension String: QueryValueConvertible {}
extension Substring: QueryValueConvertible {}
extension Int: QueryValueConvertible {}
extension Int8: QueryValueConvertible {}
extension Int16: QueryValueConvertible {}
extension Int32: QueryValueConvertible {}
extension Int64: QueryValueConvertible {}
extension UInt: QueryValueConvertible {}
extension UInt8: QueryValueConvertible {}
extension UInt16: QueryValueConvertible {}
extension UInt32: QueryValueConvertible {}
extension UInt64: QueryValueConvertible {}
extension Bool: QueryValueConvertible {}
extension Double: QueryValueConvertible {}
extension Float: QueryValueConvertible {}
extension Decimal: QueryValueConvertible {}
extension UUID: QueryValueConvertible {}
