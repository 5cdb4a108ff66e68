import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Header fields from an ordered list (a network client's, or swift-http-types') made into the dictionary that
/// `HTTPURLResponse` and `URLRequest` keep: the one implementation behind AsyncHTTPClient's transport and the
/// http-types bridge, so that both join the same way (and so that the fuzz target, which cannot reach code
/// behind a package trait, checks the code they run).
///
/// A dictionary keeps one value per name, so the fields are joined: one entry per name, names compared without
/// regard to the case of their ASCII letters (RFC 9110 §5.1), under the name's first spelling, its values in
/// the order they came, separated by `", "` (RFC 9110 §5.3); in a request, `Cookie` values by `"; "` (RFC 6265
/// §5.4). A response's `Set-Cookie` fields are joined with `", "` too, as `HTTPURLResponse` always has them.
/// Names equal as `String`s are one key of the dictionary, so they are one name too (the Kelvin sign is `K`):
/// no field's value is lost to another's, whatever the order of a dictionary.
///
/// One pass, one hash lookup per field whatever the names are (``CaseInsensitiveFieldName``), so the work is
/// linear in the size of the head.
enum HeaderFieldJoining {
    /// How repeated fields are joined.
    enum Style: Sendable {
        /// A response's fields: every repeated field with `", "`.
        case response
        /// A request's fields: `Cookie` with `"; "`, every other one with `", "`.
        case request
    }

    /// Adds `value` to `request`'s field `name`: set when the request has none, joined after its value otherwise,
    /// as ``Style/request`` joins (a `Cookie` with `"; "`: `URLRequest.addValue` joins every name with `","`, which
    /// a server reads as one cookie whose value runs on).
    static func add(_ value: String, to name: String, in request: inout URLRequest) {
        guard let current = request.value(forHTTPHeaderField: name) else {
            return request.setValue(value, forHTTPHeaderField: name)
        }
        guard name.caseInsensitiveEquals("Cookie") else { return request.addValue(value, forHTTPHeaderField: name) }
        request.setValue(current + "; " + value, forHTTPHeaderField: name)
    }

    /// `fields` joined by `style`; nothing is refused or changed but the joining.
    ///
    /// - Parameters:
    ///   - fields: The fields, in order.
    ///   - count: How many fields there are (or fewer), to size the dictionaries.
    ///   - style: How repeated fields are joined.
    static func joined<Fields: Collection<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int,
        style: Style
    ) -> [String: String] {
        // The usual head has no name twice: then there is nothing to join, and the fields go straight into the
        // dictionary (a third of what the general path costs for a dozen fields, measured with callgrind).
        if let distinct = distinctFields(fields, count: count) { return distinct }
        return joinedByName(fields, count: count, style: style)
    }

    /// The most fields ``distinctFields(_:count:)`` takes before it leaves them to the general path: it compares
    /// a name with the names before it of the same length, so its work grows with the square of the count.
    static let distinctFieldLimit = 64

    /// `fields` as a dictionary, each name as it is spelled, when no two names are the same without regard to the
    /// case of their ASCII letters, nor equal as `String`s; `nil` when two are, or when there are more than ``distinctFieldLimit`` fields
    /// (the general path, ``joinedByName(_:count:style:)``, then joins them). For fields with distinct names, both
    /// give the same dictionary.
    ///
    /// No hashing of its own: a name is compared with the names already taken (as ``CaseInsensitiveFieldName``
    /// compares them, the general path's keys) only when one of them has the same length (a bit per length, modulo
    /// 64, says so), which for the fields of a real head is rarely more than a few comparisons that end at the first
    /// byte.
    static func distinctFields<Fields: Collection<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int
    ) -> [String: String]? {
        var distinct = DistinctFields(count: count)
        for (name, value) in fields {
            guard distinct.insert(name: name, value: value) else { return nil }
        }
        return distinct.fields
    }

    /// What ``distinctFields(_:count:)`` builds, a field at a time, so that the checked conversion
    /// (``responseFields(_:count:for:maximumFieldCount:)``) builds it in the pass that checks the fields.
    struct DistinctFields {
        /// The fields inserted so far, each name as it is spelled.
        private(set) var fields: [String: String]
        /// A bit per name length (modulo 64) that some name inserted has.
        private var lengths: UInt64 = 0

        init(count: Int) {
            fields = [String: String](minimumCapacity: count)
        }

        /// Adds a field, unless ``distinctFieldLimit`` fields are in already or its name is the same as one of
        /// them without regard to the case of their ASCII letters, or equal to one as `String`s: then `false`, and
        /// ``fields`` is of no more use (the general path, ``joinedByName(_:count:style:)``, joins the fields).
        mutating func insert(name: String, value: String) -> Bool {
            guard fields.count < distinctFieldLimit else { return false }
            let bit: UInt64 = 1 << UInt64(name.utf8.count & 63)
            if lengths & bit != 0 {
                let key = CaseInsensitiveFieldName(name)
                for earlier in fields.keys where CaseInsensitiveFieldName(earlier) == key { return false }
            }
            lengths |= bit
            // A name `String` equality takes for one already there (canonically equivalent, as the Kelvin sign and
            // `K` are) is left to the general path too.
            return fields.updateValue(value, forKey: name) == nil
        }
    }

    /// `fields` joined by `style` through a dictionary keyed by name without case: what ``joined(_:count:style:)``
    /// does for any fields, linear in their number.
    static func joinedByName<Fields: Collection<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int,
        style: Style
    ) -> [String: String] {
        // Keyed by the first spelling of each name, compared without case.
        var joined = [CaseInsensitiveFieldName: String](minimumCapacity: count)
        for (name, value) in fields {
            let key = CaseInsensitiveFieldName(name)
            if let index = joined.index(forKey: key) {
                let separator = style == .request && key == cookie ? "; " : ", "
                joined.values[index] += separator + value
            } else {
                joined[key] = value
            }
        }
        var result = [String: String](minimumCapacity: joined.count)
        for (name, value) in joined {
            // Names of ASCII only are equal as `String`s when their bytes are, so those the same without case are
            // in one group already. A group's name that is not ASCII (no valid name; a server's bytes, to confuse)
            // may be equal as a `String` to another group's (canonically equivalent, as the Kelvin sign and `K`
            // are), one key of the dictionary, and one group's values would replace the other's: those fields are
            // joined as one name. (Case changes only ASCII bytes, so a group has a name that is not ASCII exactly
            // when its first spelling is not.)
            guard name.spelling.utf8.allSatisfy({ $0 < 0x80 }) else {
                return joinedAcrossEquivalence(fields, count: count, style: style)
            }
            result[name.spelling] = value
        }
        return result
    }

    /// `fields` joined by `style` when names are the same if they are without regard to the case of their ASCII
    /// letters, or equal as `String`s (which the dictionary's keys are), or linked by a chain of such names:
    /// `X-\u{212A}` (the Kelvin sign), `x-k` and `X-K` are one name. Each group of fields is joined under the
    /// spelling of its first field, its values in the order the fields came; a request's group is `Cookie` when its
    /// first name is.
    ///
    /// Only a head with a name that is not ASCII, which no valid name is, comes here (a server's bytes, to confuse
    /// whoever reads them), so this path is plain rather than fast: two lookups a field.
    static func joinedAcrossEquivalence<Fields: Collection<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int,
        style: Style
    ) -> [String: String] {
        let fields = Array(fields)
        // A forest over the fields' indices: each group's root is its first field, as a field joins the group of
        // the first field with its name by either comparison.
        var parent = Array(fields.indices)
        func root(_ index: Int) -> Int {
            var index = index
            while parent[index] != index {
                parent[index] = parent[parent[index]]
                index = parent[index]
            }
            return index
        }
        var firstWithoutCase = [CaseInsensitiveFieldName: Int](minimumCapacity: count)
        var firstAsString = [String: Int](minimumCapacity: count)
        for (index, field) in fields.enumerated() {
            let key = CaseInsensitiveFieldName(field.name)
            for earlier in [firstWithoutCase[key], firstAsString[field.name]] {
                guard let earlier else { continue }
                let (first, second) = (root(earlier), root(index))
                parent[max(first, second)] = min(first, second)
            }
            if firstWithoutCase[key] == nil { firstWithoutCase[key] = index }
            if firstAsString[field.name] == nil { firstAsString[field.name] = index }
        }
        var joined = [Int: String](minimumCapacity: count)
        for (index, field) in fields.enumerated() {
            let group = root(index)
            if let value = joined[group] {
                let separator =
                    style == .request && CaseInsensitiveFieldName(fields[group].name) == cookie ? "; " : ", "
                joined[group] = value + separator + field.value
            } else {
                joined[group] = field.value
            }
        }
        var result = [String: String](minimumCapacity: joined.count)
        for (group, value) in joined {
            result[fields[group].name] = value
        }
        return result
    }

    /// The fields of a response head that a network client parsed, checked as ``ResponseHeadCheck`` checks
    /// every transport's responses and joined (``Style/response``).
    ///
    /// - Parameters:
    ///   - fields: The fields, in order.
    ///   - count: How many fields there are.
    ///   - request: The request the response answers, for the error.
    ///   - maximumFieldCount: The most fields accepted (``ResponseHeadCheck/maximumFieldCount``; tests raise it).
    /// - Throws: ``CourierError/Code/nonHTTPResponse`` for more than `maximumFieldCount` fields, a name or value
    ///   with a control character other than a tab (CR, LF and NUL among them), or both `Transfer-Encoding` and
    ///   `Content-Length`: no such field reaches the response, whatever the client let through.
    static func responseFields<Fields: Collection<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int,
        for request: URLRequest?,
        maximumFieldCount: Int = ResponseHeadCheck.maximumFieldCount
    ) throws -> [String: String] {
        guard count <= maximumFieldCount else {
            throw ResponseHeadCheck.tooManyFields(count, request: request)
        }
        // One pass: each field is checked and, as long as no name has come twice, goes straight into the
        // dictionary (``distinctFields(_:count:)``); the fields are joined by name only when one has.
        var distinct: DistinctFields? = DistinctFields(count: count)
        var framing = (transferEncoding: false, contentLength: false)
        for (name, value) in fields {
            if let control = ResponseHeadCheck.forbiddenControlByWords(in: name) {
                throw ResponseHeadCheck.invalidName(control: control, request: request)
            }
            if let control = ResponseHeadCheck.forbiddenControlByWords(in: value) {
                throw ResponseHeadCheck.invalidValue(name: name, control: control, request: request)
            }
            let length = name.utf8.count
            if length == 17, name.caseInsensitiveEquals("Transfer-Encoding") {
                framing.transferEncoding = true
            } else if length == 14, name.caseInsensitiveEquals("Content-Length") {
                framing.contentLength = true
            }
            if distinct?.insert(name: name, value: value) == false { distinct = nil }
        }
        if framing.transferEncoding && framing.contentLength {
            throw ResponseHeadCheck.conflictingFraming(request: request)
        }
        return distinct?.fields ?? joinedByName(fields, count: count, style: .response)
    }

    /// `Cookie`, whose values a request joins with `"; "`.
    private static let cookie = CaseInsensitiveFieldName("Cookie")
}
