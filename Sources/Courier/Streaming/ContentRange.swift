/// A `Content-Range` field value in bytes (RFC 9110 §14.4): `bytes 1000-2999/3000`, `bytes 1000-2999/*`, or the
/// `bytes */3000` of a `416`.
///
/// Every number goes through ``NetworkNumber/integer(_:maximum:)``, so a position of 30 digits is clamped to
/// `Int64.max` (and then matches no real offset) instead of trapping.
struct ContentRange: Equatable {
    /// The first and last byte positions of the part; `nil` for an unsatisfied range (`bytes */N`).
    let first: Int64?
    let last: Int64?
    /// The complete length of the representation; `nil` when the server wrote `*`.
    let completeLength: Int64?

    /// Parses `value`; `nil` for anything that is not a well-formed byte range (another unit, a last position
    /// before the first or past the complete length, text where a number belongs).
    init?(_ value: String) {
        let trimmed = value[...].trimmingSpaces
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "bytes " else { return nil }
        let rest = trimmed.dropFirst(6)
        let halves = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let complete = halves[1].trimmingSpaces
        if complete == "*" {
            completeLength = nil
        } else {
            guard let length = NetworkNumber.integer(complete) else { return nil }
            completeLength = length
        }
        let range = halves[0].trimmingSpaces
        if range == "*" {
            // An unsatisfied range says only the complete length.
            guard completeLength != nil else { return nil }
            (first, last) = (nil, nil)
            return
        }
        let positions = range.split(separator: "-", omittingEmptySubsequences: false)
        guard positions.count == 2,
            let first = NetworkNumber.integer(positions[0]),
            let last = NetworkNumber.integer(positions[1]),
            first <= last
        else { return nil }
        if let completeLength, last >= completeLength { return nil }
        (self.first, self.last) = (first, last)
    }
}

extension Substring {
    /// The text without the spaces and tabs around it.
    fileprivate var trimmingSpaces: Substring {
        let start = drop { $0 == " " || $0 == "\t" }
        guard let end = start.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return start[start.endIndex...] }
        return start[...end]
    }
}
