import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension Response {
    /// A response whose body is `value` as JSON, keys sorted.
    static func json(
        _ value: some Encodable,
        status: HTTPResponse.Status = .ok,
        headers: HTTPFields = [:]
    ) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A response whose body is `text` as UTF-8 plain text.
    static func text(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// A `400 Bad Request` with the reason as JSON, for malformed test requests.
    static func badRequest(_ reason: String) -> Response {
        (try? .json(["error": reason], status: .badRequest)) ?? .text(reason, status: .badRequest)
    }
}
