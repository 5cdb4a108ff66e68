#if HTTPTypes
public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Conversions between `HTTPURLResponse` and swift-http-types' `HTTPResponse` (trait `HTTPTypes`).
///
/// ```swift
/// let response = try HTTPResponse(urlResponse)                  // status and headers
/// let urlResponse = HTTPURLResponse(response, url: url)
/// ```
///
/// `HTTPURLResponse` keeps its headers in a dictionary: their order is not kept, and repeated fields are one
/// field whose values are joined with `", "` (`Set-Cookie` too, as `HTTPURLResponse` always has them).
extension HTTPResponse {
    /// Creates a response with the status and header fields of `response`.
    ///
    /// - Parameter response: The response.
    /// - Throws: ``CourierError/Code/nonHTTPResponse`` when its status is not a three-digit code, a header
    ///   name or value is not valid HTTP (naming the header and what is wrong), or it has more than 1,000 header
    ///   fields (the most Courier's transports accept).
    public init(_ response: HTTPURLResponse) throws {
        guard (100...999).contains(response.statusCode) else {
            throw CourierError(
                .nonHTTPResponse,
                message: "the status \(response.statusCode) is not a three-digit HTTP status code",
                response: response
            )
        }
        let headerFields = response.allHeaderFields
        guard headerFields.count <= ResponseHeadCheck.maximumFieldCount else {
            throw ResponseHeadCheck.tooManyFields(headerFields.count, request: nil)
        }
        var fields = HTTPFields()
        fields.reserveCapacity(headerFields.count)
        for case (let name as String, let value as String) in headerFields {
            fields.append(try HTTPField.converting(name: name, value: value, code: .nonHTTPResponse))
        }
        self.init(status: .init(code: response.statusCode), headerFields: fields)
    }
}

extension HTTPURLResponse {
    /// Creates an `HTTPURLResponse` (HTTP/1.1) with the status and header fields of `response`.
    ///
    /// Repeated fields are joined into one, in order, with `", "`.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - url: The URL of the request it answers.
    public convenience init(_ response: HTTPResponse, url: URL) {
        let fields = response.headerFields
        let headers = HeaderFieldJoining.joined(
            fields.lazy.map { (name: $0.name.rawName, value: $0.value) },
            count: fields.count,
            style: .response
        )
        // HTTPURLResponse's initializer fails only for a malformed HTTP version, which is given here.
        self.init(url: url, statusCode: response.status.code, httpVersion: "HTTP/1.1", headerFields: headers)!
    }
}
#endif
