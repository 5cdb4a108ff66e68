import Foundation

/// A request's query, decoded: names to values in the order they appeared.
///
/// Decoding is RFC 3986 percent-decoding only; a `+` stays a `+`. A name without `=` has the value
/// `""`. A component that is not valid percent-encoding is kept as it was.
struct QueryItems: Sendable {
    private(set) var values: [String: [String]] = [:]

    init(_ query: String?) {
        guard let query, !query.isEmpty else { return }
        for component in query.split(separator: "&", omittingEmptySubsequences: true) {
            let pair = component.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(pair[0])
            let value = pair.count > 1 ? Self.decode(pair[1]) : ""
            self.values[name, default: []].append(value)
        }
    }

    /// The first value for a name.
    subscript(name: String) -> String? {
        self.values[name]?.first
    }

    /// Every value for a name, in order.
    func all(_ name: String) -> [String] {
        self.values[name] ?? []
    }

    private static func decode(_ text: Substring) -> String {
        text.removingPercentEncoding ?? String(text)
    }
}
