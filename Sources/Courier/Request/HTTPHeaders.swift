/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// ```swift
/// var headers: HTTPHeaders = ["Accept": "application/json"]
/// headers["X-Request-ID"] = "42"
/// headers.add(name: "Accept-Language", value: "en")
/// ```
public struct HTTPHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The field's name as given.
        public var name: String
        /// The field's value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields, in order.
    public private(set) var fields: [Field]

    /// Creates an empty list.
    public init() {
        fields = []
    }

    /// Creates a list from fields.
    public init(_ fields: [Field]) {
        self.fields = fields
    }

    /// Creates a list from a dictionary literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// Whether the list is empty.
    public var isEmpty: Bool { fields.isEmpty }

    /// The first value of the header `name` (case-insensitive); setting replaces every field of that
    /// name, and `nil` removes them.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            fields.removeAll { $0.name.caseInsensitiveEquals(name) }
            if let newValue { fields.append(Field(name: name, value: newValue)) }
        }
    }

    /// All values of the header `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Adds a field, keeping any other field of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Returns an iterator over the fields.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }
}

extension String {
    /// Whether the two strings are equal ignoring the case of ASCII letters, the only case a field name has (RFC 9110
    /// §5.1: a name is a token of ASCII). Every other byte compares exactly: names that are not ASCII (no valid name;
    /// a server's bytes, to confuse) are the same only when their bytes are, never by Unicode's folding (`É` and `é`,
    /// `Σ` and `σ` are two names).
    ///
    /// The bytes are compared in the strings' own storage (a `zip` of the two UTF-8 views cost about 60
    /// instructions a byte, callgrind); `caseInsensitiveEqualsByViews` is the same comparison over the views, for
    /// a string without contiguous UTF-8 and for the tests.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let compared = utf8.withContiguousStorageIfAvailable { bytes in
            other.utf8.withContiguousStorageIfAvailable { otherBytes in
                Self.asciiCaseInsensitiveEquals(bytes, otherBytes)
            }
        }
        guard case .some(.some(let isEqual)) = compared else { return caseInsensitiveEqualsByViews(other) }
        return isEqual
    }

    /// ``caseInsensitiveEquals(_:)`` through the UTF-8 views.
    func caseInsensitiveEqualsByViews(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy(Self.asciiCaseInsensitiveEquals)
    }

    /// Whether two byte sequences of the same length are equal but for the case of ASCII letters.
    private static func asciiCaseInsensitiveEquals(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ otherBytes: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        for index in bytes.indices where !asciiCaseInsensitiveEquals(bytes[index], otherBytes[index]) {
            return false
        }
        return true
    }

    /// Whether two bytes are equal but for the case of an ASCII letter.
    @inline(__always)
    private static func asciiCaseInsensitiveEquals(_ a: UInt8, _ b: UInt8) -> Bool {
        a == b || (a | 0x20 == b | 0x20 && (0x61...0x7A).contains(a | 0x20))
    }
}

extension [String: String] {
    /// The value of the header field `name` in a name-to-value dictionary such as
    /// `HTTPURLResponse.allHeaderFields`, the name compared case-insensitively.
    func headerValue(_ name: String) -> String? {
        self[name] ?? first { $0.key.caseInsensitiveEquals(name) }?.value
    }
}
