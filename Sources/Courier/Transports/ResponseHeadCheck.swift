import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The checks every transport makes of a response head before it hands it over: the rules Courier holds the
/// bytes a server controls to, whichever client parsed them, so that a response accepted by one transport (and
/// by the http-types and OpenAPI bridges) is accepted by all of them.
///
/// - **Field values**: a value with a control character other than a horizontal tab (CR, LF, NUL, any other
///   byte below 0x20, DEL) is refused with ``CourierError/Code/nonHTTPResponse``. RFC 9110 §5.5 calls a value
///   with CR, LF or NUL "invalid and dangerous" and has a recipient reject the message or replace each with a
///   space; Courier rejects it (a replaced value would be one the server never sent, and the http-types bridge
///   refuses the same value). AsyncHTTPClient's parser refuses such a value itself; `URLSession` passes it on,
///   so ``URLSessionTransport`` checks it.
/// - **Framing**: a response with both `Transfer-Encoding` and `Content-Length` is refused with
///   ``CourierError/Code/nonHTTPResponse`` (RFC 9112 §6.3 allows a client to treat it as an error, and it may be
///   an attempt at response splitting). AsyncHTTPClient's parser refuses it; `URLSession` decodes the chunks.
/// - **Field count**: a head with more than ``maximumFieldCount`` fields is refused with
///   ``CourierError/Code/nonHTTPResponse``, so that no server can make the conversion of a head (which runs on a
///   thread of the cooperative pool, or on an event loop) cost more than a bounded amount of work.
enum ResponseHeadCheck {
    /// The most header fields a response may have: 1,000.
    ///
    /// An API response has 10 to 40 fields; behind a CDN and a few proxies, with a dozen cookies, rarely more than
    /// 100. hyper (Rust) refuses more than 100 by default and Node.js keeps 2,000; 1,000 leaves a factor of ten
    /// over the largest real heads while bounding what one response costs to convert (linear in the fields,
    /// about a millisecond for 1,000).
    static let maximumFieldCount = 1_000

    /// The error for a head with `count` fields, more than ``maximumFieldCount``.
    static func tooManyFields(_ count: Int, request: URLRequest?) -> CourierError {
        CourierError(
            .nonHTTPResponse,
            message: "the response has \(count) header fields, more than Courier accepts (\(maximumFieldCount))",
            request: request
        )
    }

    /// The error for the value of field `name`, which has `control` in it.
    static func invalidValue(name: String, control: UInt8, request: URLRequest?) -> CourierError {
        CourierError(
            .nonHTTPResponse,
            message: "the value of response header \(Redaction.quotedHeaderName(name)) contains a control character "
                + "(\(Redaction.escapedControl(Unicode.Scalar(control)))), which HTTP does not allow (RFC 9110 §5.5)",
            request: request
        )
    }

    /// The error for a field whose name has `control` in it (a network client that let it through).
    static func invalidName(control: UInt8, request: URLRequest?) -> CourierError {
        CourierError(
            .nonHTTPResponse,
            message: "the name of a response header contains a control character "
                + "(\(Redaction.escapedControl(Unicode.Scalar(control)))), which HTTP does not allow (RFC 9110 §5.1)",
            request: request
        )
    }

    /// The first control character in `value` that a field value may not have: any byte below 0x20 but a
    /// horizontal tab, and DEL; `nil` when there is none.
    static func forbiddenControl(in value: String) -> UInt8? {
        if let found = value.utf8.withContiguousStorageIfAvailable({ $0.first(where: isForbidden) }) {
            return found
        }
        return value.utf8.first(where: isForbidden)
    }

    private static func isForbidden(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// What is wrong with the fields of a response that a client other than Courier's own converted
    /// (`URLSession`): more than ``maximumFieldCount`` of them, or a value with a control character; `nil` when
    /// nothing is. One pass over the fields.
    static func problem(with response: HTTPURLResponse, request: URLRequest?) -> CourierError? {
        let fields = response.allHeaderFields
        guard fields.count <= maximumFieldCount else { return tooManyFields(fields.count, request: request) }
        var framing = (transferEncoding: false, contentLength: false)
        for case (let name as String, let value as String) in fields {
            if let control = forbiddenControl(in: value) {
                return invalidValue(name: name, control: control, request: request)
            }
            if name.utf8.count == 17, name.caseInsensitiveEquals("Transfer-Encoding") {
                framing.transferEncoding = true
            } else if name.utf8.count == 14, name.caseInsensitiveEquals("Content-Length") {
                framing.contentLength = true
            }
        }
        if framing.transferEncoding && framing.contentLength {
            return conflictingFraming(request: request)
        }
        return nil
    }

    /// The error for a response with both `Transfer-Encoding` and `Content-Length`.
    static func conflictingFraming(request: URLRequest?) -> CourierError {
        CourierError(
            .nonHTTPResponse,
            message: "the response has both Transfer-Encoding and Content-Length, which RFC 9112 §6.3 says to "
                + "treat as an error (a sign of response splitting)",
            request: request
        )
    }
}
