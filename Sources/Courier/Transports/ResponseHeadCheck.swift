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
///   thread of the cooperative pool, or on an event loop) cost more than a bounded amount of work. On Linux,
///   FoundationNetworking has parsed the head before this check, in time that grows with the square of its field
///   count (seconds for tens of thousands of short fields); that cost is out of Courier's reach.
enum ResponseHeadCheck {
    /// Whether `status` is an interim response's (1xx but 101 Switching Protocols), which a final one follows.
    static func isInterim(_ status: Int) -> Bool {
        (100..<200).contains(status) && status != 101
    }

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

    /// ``forbiddenControl(in:)`` eight bytes at a time, for the conversion that runs over every name and value of
    /// a head (``HeaderFieldJoining/responseFields(_:count:for:maximumFieldCount:)``): the same answer for every
    /// string, in a little over half the instructions for the fields of a real head (measured with callgrind).
    static func forbiddenControlByWords(in string: String) -> UInt8? {
        guard let found = string.utf8.withContiguousStorageIfAvailable({ forbiddenControl(in: $0) }) else {
            return forbiddenControl(in: string)
        }
        return found
    }

    /// The first byte of `bytes` that ``forbiddenControl(in:)`` refuses: a word of eight bytes with no byte below
    /// 0x20 and no DEL is passed over at once (the last word overlaps the one before it when the count is not a
    /// multiple of eight); from the first word that has one (a tab, perhaps), the bytes are looked at one by one.
    static func forbiddenControl(in bytes: UnsafeBufferPointer<UInt8>) -> UInt8? {
        var index = 0
        if bytes.count >= 8, let base = UnsafeRawPointer(bytes.baseAddress) {
            let lastWord = bytes.count - 8
            while true {
                let offset = Swift.min(index, lastWord)
                if mayHoldControl(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) {
                    index = offset
                    break
                }
                if offset == lastWord { return nil }
                index += 8
            }
        }
        while index < bytes.count {
            if isForbidden(bytes[index]) { return bytes[index] }
            index += 1
        }
        return nil
    }

    /// Whether one of the eight bytes of `word` is below 0x20 or is DEL; it may say so of a word that has neither
    /// (never the other way round). When 0x20 is taken from every byte of `word` at once, the lowest byte below
    /// 0x20 takes no borrow from the bytes under it (they are not below 0x20), so it wraps to a byte with its top
    /// bit set, where `word`'s own byte has it clear; a DEL is a zero byte of `word ^ 0x7F7F…`, found the same way
    /// by taking 0x01.
    private static func mayHoldControl(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let topBits = ones &* 0x80
        let belowSpace = (word &- ones &* 0x20) & ~word & topBits
        let delete = word ^ (ones &* 0x7F)
        let isDelete = (delete &- ones) & ~delete & topBits
        return belowSpace | isDelete != 0
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
