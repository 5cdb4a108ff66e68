import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CourierError {
    /// An ``Code/unacceptableStatus`` error whose message says which statuses were expected, as the rule
    /// reads: `"200..<300"`, `"one of 200, 304"`.
    static func unacceptableStatus(
        request: URLRequest?,
        response: HTTPURLResponse,
        body: Data,
        expected: String
    ) -> Self {
        let message = "the status \(response.statusCode) is not acceptable (expected \(expected))"
        return CourierError(.unacceptableStatus, message: message, request: request, response: response, body: body)
    }

    /// Returns a copy whose ``apiError(as:)`` answers from `errorBody`, unless it already carries a decoded
    /// API error or has no body.
    ///
    /// Pass the response's `body` when you still have it: the error keeps at most
    /// ``maximumStoredBodySize`` bytes, and a longer JSON body cut there would not decode.
    func decodingAPIError(with errorBody: ErrorBodyDecoder?, decoder: JSONDecoder, body: Data? = nil) -> CourierError {
        guard decodedAPIError == nil, let errorBody, let body = body ?? responseBody, !body.isEmpty else {
            return self
        }
        var copy = self
        copy.decodedAPIError = errorBody.decode(body, decoder)
        return copy
    }
}
