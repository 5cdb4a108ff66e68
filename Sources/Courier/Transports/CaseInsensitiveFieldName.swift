/// A header field name as a dictionary key that is equal to every other spelling of the same name: compared
/// and hashed without regard to the case of its ASCII letters (RFC 9110 §5.1), so that the fields of a head can
/// be grouped by name in one pass, whatever the names are.
///
/// It keeps the spelling it was made with: the first spelling of a name, when it is the key a dictionary keeps.
struct CaseInsensitiveFieldName: Hashable, Sendable {
    /// The name as it was spelled.
    let spelling: String

    init(_ spelling: String) {
        self.spelling = spelling
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.spelling.utf8.count == rhs.spelling.utf8.count
            && lhs.spelling.utf8.elementsEqual(rhs.spelling.utf8) { $0.asciiLowercased == $1.asciiLowercased }
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = spelling.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes { hasher.combine(byte.asciiLowercased) }
        }
        if hashed == nil {
            for byte in spelling.utf8 { hasher.combine(byte.asciiLowercased) }
        }
        // The length ends the sequence, as `String`'s own hashing does.
        hasher.combine(spelling.utf8.count)
    }
}
