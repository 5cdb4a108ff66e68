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
    static func joined<Fields: Sequence<(name: String, value: String)>>(
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
    static func responseFields<Fields: Sequence<(name: String, value: String)>>(
        _ fields: Fields,
        count: Int,
        for request: URLRequest?,
        maximumFieldCount: Int = ResponseHeadCheck.maximumFieldCount
    ) throws -> [String: String] {
        guard count <= maximumFieldCount else {
            throw ResponseHeadCheck.tooManyFields(count, request: request)
        }
        var framing = (transferEncoding: false, contentLength: false)
        for (name, value) in fields {
            if let control = ResponseHeadCheck.forbiddenControl(in: name) {
                throw ResponseHeadCheck.invalidName(control: control, request: request)
            }
            if let control = ResponseHeadCheck.forbiddenControl(in: value) {
                throw ResponseHeadCheck.invalidValue(name: name, control: control, request: request)
            }
            if name.utf8.count == 17, name.caseInsensitiveEquals("Transfer-Encoding") {
                framing.transferEncoding = true
            } else if name.utf8.count == 14, name.caseInsensitiveEquals("Content-Length") {
                framing.contentLength = true
            }
        }
        if framing.transferEncoding && framing.contentLength {
            throw ResponseHeadCheck.conflictingFraming(request: request)
        }
        return joined(fields, count: count, style: .response)
    }

    /// `Cookie`, whose values a request joins with `"; "`.
    private static let cookie = CaseInsensitiveFieldName("Cookie")
}
