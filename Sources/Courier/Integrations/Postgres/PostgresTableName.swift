#if Postgres
/// A table name Courier puts into SQL text, where a bind parameter cannot go: only a plain identifier,
/// optionally schema-qualified (`courier_tokens`, `ops.courier_tokens`), each part a lowercase letter or `_`
/// followed by up to 62 lowercase letters, digits or `_`. Anything else is refused before any SQL is built,
/// so no quoting is needed and nothing can be injected through a configured name.
struct PostgresTableName: Sendable, CustomStringConvertible {
    let description: String

    init(_ name: String) throws(CourierError) {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy(Self.isIdentifier) else {
            throw CourierError(
                .invalidRequest,
                message: "a PostgreSQL table name must be [schema.]name of a-z, 0-9 and _, not starting with a digit"
            )
        }
        description = name
    }

    /// The name without its schema, for derived names (a notification channel, an index).
    var unqualified: String { String(description.split(separator: ".").last!) }

    private static func isIdentifier(_ part: Substring) -> Bool {
        guard let first = part.utf8.first, part.utf8.count <= 63 else { return false }
        let isLetter = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == 0x5F }
        let isDigit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        return isLetter(first) && part.utf8.allSatisfy { isLetter($0) || isDigit($0) }
    }
}
#endif
