import Foundation

/// A `String` compared and hashed by its UTF-8 bytes.
///
/// `String`'s own `==` and hashing follow Unicode canonical equivalence: `"é"` precomposed equals `"e\u{301}"`,
/// and the Kelvin sign equals `K`. That is right for text a person reads and wrong for a key made of what a
/// caller or a server sent: two tenants, two credentials, two secrets or two `Vary` values that differ in bytes
/// are different to every server, and must never be one key here.
struct ExactString: Hashable, Sendable {
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        let count = lhs.string.utf8.count
        guard count == rhs.string.utf8.count else { return false }
        // In the strings' own storage when both have it contiguous (native strings do): no copy, one memcmp.
        let compared = lhs.string.utf8.withContiguousStorageIfAvailable { left in
            rhs.string.utf8.withContiguousStorageIfAvailable { right in
                count == 0 || memcmp(left.baseAddress!, right.baseAddress!, count) == 0
            }
        }
        if case .some(.some(let isEqual)) = compared { return isEqual }
        return lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(utf8Of: string)
    }
}

extension Hasher {
    /// Feeds the UTF-8 bytes of `string` and their count, so that strings that differ in bytes hash apart even
    /// when they are equal as `String`s.
    mutating func combine(utf8Of string: String) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable { combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            var string = string
            string.withUTF8 { combine(bytes: UnsafeRawBufferPointer($0)) }
        }
        combine(string.utf8.count)
    }
}

extension String {
    /// Whether the two strings have the same UTF-8 bytes (`==` compares canonical equivalence).
    func hasSameBytes(as other: String) -> Bool {
        ExactString(self) == ExactString(other)
    }

    /// The string with its ASCII capital letters, and only those, made small: the case-insensitivity of HTTP's
    /// tokens (RFC 9110 §5.1). `lowercased()` maps more (the Kelvin sign to `k`), so two names that differ to a
    /// server could become one.
    var asciiLowercased: String {
        guard utf8.contains(where: { $0.asciiLowercased != $0 }) else { return self }
        return String(decoding: utf8.map(\.asciiLowercased), as: UTF8.self)
    }
}

extension UInt8 {
    /// The byte with an ASCII capital letter made small, any other byte as it is: the one case folding of HTTP's
    /// names, schemes and hosts, wherever they are compared or keyed.
    var asciiLowercased: UInt8 {
        self &- UInt8(ascii: "A") < 26 ? self | 0x20 : self
    }
}
