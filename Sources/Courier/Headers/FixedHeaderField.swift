import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A header field a layer sets on every request with the same value (a fixed credential): what
/// `URLRequest.setValue(_:forHTTPHeaderField:)` does, with what it works out on each call worked out once.
///
/// On Linux, FoundationNetworking's `setValue` capitalizes the name, checks the value character by character and
/// looks for the field under any spelling by lowercasing every name: about 19,000 instructions for a bearer
/// token (Swift 6.3.1, callgrind), on every request. Here the name as `setValue` stores it, and whether it
/// accepts the value, are learned once, from `setValue` itself on a scratch request; ``set(on:)`` then
/// replaces the request's fields with the same dictionary `setValue` would leave. Where that cannot be known
/// cheaply, it calls `setValue`: on other platforms, for a request with a field name that is not ASCII (whose
/// lowercasing Unicode decides), or with the field twice under different spellings (which one `setValue`
/// removes depends on the dictionary's order). A seeded test holds the two paths to the same fields.
struct FixedHeaderField: Sendable {
    /// The name, as the layer spells it.
    let name: String
    /// The value, the same on every request.
    let value: String
    /// The name as `setValue` stores it, when ``set(on:)`` may write the fields itself; `nil` when it calls
    /// `setValue` every time.
    private let storedName: String?

    /// Learns how `setValue` stores `value` under `name`.
    ///
    /// - Parameters:
    ///   - name: The field's name.
    ///   - value: Its value.
    init(name: String, value: String) {
        self.name = name
        self.value = value
        #if canImport(FoundationNetworking)
        var probe = URLRequest(url: URL(string: "http://localhost/")!)
        probe.setValue(value, forHTTPHeaderField: name)
        // A value `setValue` refuses leaves no field; a name that is not ASCII is left to it too.
        if let stored = probe.allHTTPHeaderFields, stored.count == 1, let field = stored.first,
            field.value == value, Self.isASCII(name), Self.isASCII(field.key),
            CaseInsensitiveFieldName(field.key) == CaseInsensitiveFieldName(name)
        {
            storedName = field.key
        } else {
            storedName = nil
        }
        #else
        storedName = nil
        #endif
    }

    /// Sets the field on `request`, replacing it under any spelling, as `setValue(value, forHTTPHeaderField: name)`
    /// does.
    func set(on request: inout URLRequest) {
        guard let storedName, let fields = Self.fields(of: request, without: name) else {
            request.setValue(value, forHTTPHeaderField: name)
            return
        }
        var replaced = fields
        replaced[storedName] = value
        request.allHTTPHeaderFields = replaced
    }

    /// Whether ``set(on:)`` writes `request`'s fields itself rather than calling `setValue` (for tests).
    func writesFields(for request: URLRequest) -> Bool {
        storedName != nil && Self.fields(of: request, without: name) != nil
    }

    /// `request`'s fields without the one named `name` (under any spelling), or `nil` when only `setValue` knows
    /// which field it would replace: a name that is not ASCII, or two spellings of `name`.
    private static func fields(of request: URLRequest, without name: String) -> [String: String]? {
        guard var fields = request.allHTTPHeaderFields else { return [:] }
        let key = CaseInsensitiveFieldName(name)
        var existing: String?
        for stored in fields.keys {
            guard isASCII(stored) else { return nil }
            if CaseInsensitiveFieldName(stored) == key {
                guard existing == nil else { return nil }
                existing = stored
            }
        }
        if let existing { fields.removeValue(forKey: existing) }
        return fields
    }

    private static func isASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 }
    }
}
