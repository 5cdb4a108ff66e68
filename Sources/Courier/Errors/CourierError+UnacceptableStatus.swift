import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CourierError {
    /// An ``Code/unacceptableStatus`` error whose message describes the accepted statuses in words
    /// (`"one of 200, 304"`), for rules that are not a single range.
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
    func decodingAPIError(with errorBody: ErrorBodyDecoder?, decoder: JSONDecoder) -> CourierError {
        guard decodedAPIError == nil, let errorBody, let responseBody, !responseBody.isEmpty else { return self }
        var copy = self
        copy.decodedAPIError = errorBody.decode(responseBody, decoder)
        return copy
    }
}
