public import Foundation

/// Query items written as a literal: `["q": "a b", "tag": ["x", "y"], "page": 2, "flag": nil]`.
///
/// An array becomes a repeated key (`tag=x&tag=y`); `nil` becomes a bare key (`flag`). Items keep the
/// order they are written in. See ``Request`` for how they are percent-encoded.
public struct Query: Sendable, Hashable, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    /// A query value: a string, a number, a list of them, or nothing.
    public struct Value: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
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
    }

    /// The items, in order.
    public var items: [URLQueryItem]

    /// Creates a query from items.
    public init(_ items: [URLQueryItem]) {
        self.items = items
    }

    /// Creates a query from a dictionary literal, keeping its order.
    public init(dictionaryLiteral elements: (String, Value)...) {
        items = elements.flatMap { name, value in value.values.map { URLQueryItem(name: name, value: $0) } }
    }

    /// Creates a query from items written as an array literal.
    public init(arrayLiteral elements: URLQueryItem...) {
        items = elements
    }
}
