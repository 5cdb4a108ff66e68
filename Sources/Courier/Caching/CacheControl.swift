import Foundation

/// The directives of one `Cache-Control` field (RFC 9111 §5.2), as a cache reads them.
///
/// Names are compared case-insensitively; a directive given twice keeps its first value; an argument in
/// quotes has its quotes removed; a field-name list (`no-cache="Set-Cookie"`) counts as the bare directive,
/// which is the stricter reading. Unknown directives are ignored.
struct CacheControl: Sendable, Equatable {
    var maxAge: Int?
    var sharedMaxAge: Int?
    var staleIfError: Int?
    var noStore = false
    var noCache = false
    var isPrivate = false
    var isPublic = false
    var mustRevalidate = false
    /// A request's `only-if-cached` (RFC 9111 §5.2.1.7): a stored response or a `504`, never the network.
    var onlyIfCached = false
    /// A request's `min-fresh` (RFC 9111 §5.2.1.3): how many more seconds a stored response must stay fresh to
    /// answer it.
    var minFresh: Int?
    /// A request's `max-stale` (RFC 9111 §5.2.1.2): how many seconds past its freshness a stored response may still
    /// answer it; without an argument, any number (``NetworkNumber/maximumSeconds``).
    var maxStale: Int?

    init() {}

    /// Parses the value of a `Cache-Control` field (several fields joined with commas).
    init(_ value: String?) {
        guard let value else { return }
        for part in Self.directives(value) {
            let name = part.name
            switch name {
            case "max-age": if maxAge == nil { maxAge = Self.seconds(part.argument) }
            case "s-maxage": if sharedMaxAge == nil { sharedMaxAge = Self.seconds(part.argument) }
            case "stale-if-error": if staleIfError == nil { staleIfError = Self.seconds(part.argument) }
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "private": isPrivate = true
            case "public": isPublic = true
            case "must-revalidate": mustRevalidate = true
            case "only-if-cached": onlyIfCached = true
            case "min-fresh": if minFresh == nil { minFresh = Self.seconds(part.argument) }
            case "max-stale":
                // Without an argument: any staleness. A malformed one counts as zero, as for `max-age`.
                if maxStale == nil { maxStale = Self.seconds(part.argument) ?? Self.anyStaleness }
            default: break
            }
        }
    }

    /// The `max-stale` of a directive without an argument.
    private static let anyStaleness = NetworkNumber.int(NetworkNumber.maximumSeconds)

    /// A delta-seconds argument (RFC 9111 §1.2.2): digits only; a value above
    /// ``NetworkNumber/maximumSeconds`` (about 34,800 years) is that many, as §1.2.2 allows ("the greatest
    /// positive integer it can conveniently represent"). A malformed argument counts as zero for `max-age`
    /// readers, which is the safe reading.
    private static func seconds(_ argument: Substring?) -> Int? {
        guard let argument else { return nil }
        return NetworkNumber.digits(argument.utf8, maximum: NetworkNumber.maximumSeconds).map(NetworkNumber.int) ?? 0
    }

    /// The comma-separated directives of `value` (commas inside quoted strings do not split), each name
    /// lowercased and each argument unquoted. Works on Substrings with ASCII trimming: this runs on every
    /// freshness check, and Foundation's `trimmingCharacters(in:)` cost more than the rest of a cache hit.
    private static func directives(_ value: String) -> [(name: String, argument: Substring?)] {
        var result: [(String, Substring?)] = []
        var inQuotes = false
        var start = value.startIndex
        var index = value.startIndex
        func flush(upTo end: String.Index) {
            let item = FieldText.trimmed(value[start..<end])
            guard !item.isEmpty else { return }
            if let equals = item.utf8.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(FieldText.trimmed(item[..<equals])).asciiLowercased
                var argument = FieldText.trimmed(item[item.utf8.index(after: equals)...])
                let quote = UInt8(ascii: "\"")
                if argument.utf8.count >= 2, argument.utf8.first == quote, argument.utf8.last == quote {
                    let bytes = argument.utf8
                    argument = argument[bytes.index(after: bytes.startIndex)..<bytes.index(before: bytes.endIndex)]
                }
                result.append((name, argument))
            } else {
                result.append((String(item).asciiLowercased, nil))
            }
        }
        // Byte by byte: the separators are ASCII, so every index found is also a character boundary.
        let bytes = value.utf8
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                inQuotes.toggle()
            } else if byte == UInt8(ascii: ","), !inQuotes {
                flush(upTo: index)
                start = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        flush(upTo: value.endIndex)
        return result
    }
}
