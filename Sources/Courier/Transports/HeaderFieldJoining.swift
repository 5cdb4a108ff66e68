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
            result[name.spelling] = value
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
