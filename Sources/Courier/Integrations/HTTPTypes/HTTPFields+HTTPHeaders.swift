#if HTTPTypes
import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Conversions between Courier's ``HTTPHeaders`` and swift-http-types' `HTTPFields` (trait `HTTPTypes`).
///
/// Both are ordered lists that keep repeated fields, so the conversions keep every field, in order:
///
/// ```swift
/// let fields = try HTTPFields(headers)          // throws for a name or value HTTP does not allow
/// let headers = HTTPHeaders(fields)             // never fails
/// ```
extension HTTPFields {
    /// Creates fields from Courier's headers, every field in its order, repeated ones kept.
    ///
    /// - Parameter headers: The headers.
    /// - Throws: ``CourierError/Code/invalidRequest`` for a name that is not an HTTP token or a value that is
    ///   not a valid field value (a control character, or a space or tab at either end), naming the header
    ///   and what is wrong, or for more fields than an `HTTPFields` holds (65,535); nothing is changed to make
    ///   it fit.
    public init(_ headers: HTTPHeaders) throws {
        guard headers.fields.count <= Self.capacity else {
            throw Self.tooManyFields(headers.fields.count, request: nil)
        }
        self.init()
        reserveCapacity(headers.fields.count)
        for field in headers {
            append(try HTTPField.converting(name: field.name, value: field.value))
        }
    }
}

extension HTTPFields {
    /// The most fields an `HTTPFields` holds: appending one more stops the process (a precondition of
    /// swift-http-types), so the conversions refuse more before they start.
    static let capacity = Int(UInt16.max)

    /// The error for a request with `count` header fields, more than ``capacity``.
    static func tooManyFields(_ count: Int, request: URLRequest?) -> CourierError {
        CourierError.invalidRequest(
            "the request has \(count) header fields, more than an HTTPFields holds (\(capacity))",
            request: request
        )
    }
}

extension HTTPHeaders {
    /// Creates Courier's headers from `HTTPFields`, every field in its order, repeated ones kept.
    ///
    /// - Parameter fields: The fields.
    public init(_ fields: HTTPFields) {
        self.init(fields.map { Field(name: $0.name.rawName, value: $0.value) })
    }
}

extension HTTPField {
    /// A field for `name` and `value`, or ``CourierError/Code/invalidRequest`` saying why there can be none.
    static func converting(
        name: String,
        value: String,
        code: CourierError.Code = .invalidRequest,
        request: URLRequest? = nil
    ) throws -> HTTPField {
        guard let fieldName = HTTPField.Name(name) else {
            throw CourierError(code, message: RequestValidation.invalidNameMessage(name), request: request)
        }
        guard HTTPField.isValidValue(value) else {
            throw CourierError(
                code,
                message: "the value of header \(Redaction.quotedHeaderName(name)) \(invalidValueReason(value))",
                request: request
            )
        }
        return HTTPField(name: fieldName, value: value)
    }

    /// Why `value` is not a valid field value (RFC 9110): what `HTTPField` would otherwise change silently.
    private static func invalidValueReason(_ value: String) -> String {
        if let control = value.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            return "contains a control character (\(Redaction.escapedControl(control)))"
        }
        return "starts or ends with a space or tab"
    }
}
#endif
