public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Middleware {
    /// Throws ``CourierError/Code/unacceptableStatus`` for a response whose status is outside `acceptable`.
    ///
    /// ```swift
    /// struct APIError: Decodable, Sendable { var code: Int; var reason: String }
    ///
    /// let client = Client(
    ///     baseURL: URL(string: "https://api.example.com")!,
    ///     middleware: [.validatingStatus(errorBody: ErrorBodyDecoder(APIError.self))]
    /// )
    /// do {
    ///     let (data, _) = try await client.send(URLRequest(url: URL(string: "https://api.example.com/me")!))
    /// } catch let error as CourierError where error.code == .unacceptableStatus {
    ///     print(error.statusCode, error.bodyPreview, error.apiError(as: APIError.self)?.reason)
    /// }
    /// ```
    ///
    /// The error carries the status, the response headers (sensitive values redacted), the body (its
    /// ``CourierError/bodyPreview`` is redacted too) and the middleware's name, `"validatingStatus"`.
    /// With an `errorBody` decoder, a non-empty body is decoded as the API's error type and is available
    /// through ``CourierError/apiError(as:)``, also for raw `URLRequest`s sent with ``Client/send(_:)-(URLRequest)``.
    ///
    /// Typed ``Request``s check their own ``Request/acceptableStatus`` after the chain; this middleware is
    /// for raw requests and for making a status failure visible to the middleware outside it (a retry,
    /// say). It applies to every request that passes through it. When it throws for a typed request that
    /// declares an error body (or whose client does), the client decodes that body into the error.
    ///
    /// - Parameters:
    ///   - acceptable: The statuses that pass; `200..<300` by default.
    ///   - errorBody: How to decode the API's error body, or `nil`.
    ///   - decoder: The JSON decoder `errorBody` uses.
    /// - Returns: A middleware named `"validatingStatus"`.
    public static func validatingStatus(
        _ acceptable: Range<Int> = 200..<300,
        errorBody: ErrorBodyDecoder? = nil,
        decoder: JSONDecoder = JSONDecoder()
    ) -> Middleware {
        let expected = "\(acceptable.lowerBound)..<\(acceptable.upperBound)"
        return validating(expected: expected, errorBody: errorBody, decoder: decoder) { acceptable.contains($0) }
    }

    /// Throws ``CourierError/Code/unacceptableStatus`` for a response whose status is outside `acceptable`.
    ///
    /// ```swift
    /// .validatingStatus(200...299)
    /// ```
    ///
    /// - Parameters:
    ///   - acceptable: The statuses that pass.
    ///   - errorBody: How to decode the API's error body, or `nil`.
    ///   - decoder: The JSON decoder `errorBody` uses.
    /// - Returns: A middleware named `"validatingStatus"`.
    public static func validatingStatus(
        _ acceptable: ClosedRange<Int>,
        errorBody: ErrorBodyDecoder? = nil,
        decoder: JSONDecoder = JSONDecoder()
    ) -> Middleware {
        let expected = "\(acceptable.lowerBound)...\(acceptable.upperBound)"
        return validating(expected: expected, errorBody: errorBody, decoder: decoder) { acceptable.contains($0) }
    }

    /// Throws ``CourierError/Code/unacceptableStatus`` for a response whose status is not in `acceptable`.
    ///
    /// ```swift
    /// .validatingStatus([200, 204, 304])
    /// ```
    ///
    /// - Parameters:
    ///   - acceptable: The statuses that pass.
    ///   - errorBody: How to decode the API's error body, or `nil`.
    ///   - decoder: The JSON decoder `errorBody` uses.
    /// - Returns: A middleware named `"validatingStatus"`.
    public static func validatingStatus(
        _ acceptable: Set<Int>,
        errorBody: ErrorBodyDecoder? = nil,
        decoder: JSONDecoder = JSONDecoder()
    ) -> Middleware {
        let expected = "one of " + acceptable.sorted().map(String.init).joined(separator: ", ")
        return validating(expected: expected, errorBody: errorBody, decoder: decoder) { acceptable.contains($0) }
    }

    /// Throws ``CourierError/Code/unacceptableStatus`` for a response whose status `isAcceptable` rejects.
    ///
    /// ```swift
    /// .validatingStatus { status in (200..<400).contains(status) && status != 302 }
    /// ```
    ///
    /// - Parameters:
    ///   - errorBody: How to decode the API's error body, or `nil`.
    ///   - decoder: The JSON decoder `errorBody` uses.
    ///   - isAcceptable: Whether a status passes.
    /// - Returns: A middleware named `"validatingStatus"`.
    public static func validatingStatus(
        errorBody: ErrorBodyDecoder? = nil,
        decoder: JSONDecoder = JSONDecoder(),
        where isAcceptable: @escaping @Sendable (Int) -> Bool
    ) -> Middleware {
        validating(expected: "a status the rule accepts", errorBody: errorBody, decoder: decoder, isAcceptable)
    }

    private static func validating(
        expected: String,
        errorBody: ErrorBodyDecoder?,
        decoder: JSONDecoder,
        _ isAcceptable: @escaping @Sendable (Int) -> Bool
    ) -> Middleware {
        Middleware(name: "validatingStatus", waitsOnlyWithinDeadline: true) { request, next in
            let (data, response) = try await next(request)
            guard isAcceptable(response.statusCode) else {
                let error = CourierError.unacceptableStatus(
                    request: request,
                    response: response,
                    body: data,
                    expected: expected
                )
                throw error.decodingAPIError(with: errorBody, decoder: decoder, body: data)
            }
            return (data, response)
        }
    }
}
