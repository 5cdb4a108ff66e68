public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The response type for endpoints that return no body (or a body you want to ignore).
///
/// ```swift
/// let _: EmptyResponse = try await client.send(.delete("/users/42"))
/// ```
public struct EmptyResponse: Decodable, Sendable, Hashable {
    /// Creates an empty response.
    public init() {}

    /// Creates an empty response, ignoring whatever the decoder holds.
    ///
    /// - Parameter decoder: Ignored.
    /// - Throws: Never.
    public init(from decoder: any Decoder) throws {}
}

/// What a ``Request``'s decoding closure can use besides the body and the response.
public struct ResponseDecodingContext: Sendable {
    /// The client's JSON decoder.
    public var decoder: JSONDecoder
    /// The request as the client built it from the ``Request``, before any middleware changed it.
    public var request: URLRequest?

    /// Creates a context.
    ///
    /// - Parameters:
    ///   - decoder: The client's JSON decoder.
    ///   - request: The request as the client built it.
    public init(decoder: JSONDecoder, request: URLRequest? = nil) {
        self.decoder = decoder
        self.request = request
    }
}

/// Decodes an API's error body (for example `{"error":true,"code":999,"reason":"Invalid Token."}`) from
/// a response whose status is not acceptable, so that the thrown ``CourierError`` carries it.
///
/// Declare one per client (``Client/init(baseURL:transport:middleware:encoder:decoder:errorBody:)``) or
/// per request (``Request/decodingErrors(as:)``); read it with ``CourierError/apiError(as:)``.
public struct ErrorBodyDecoder: Sendable {
    let decode: @Sendable (Data, JSONDecoder) -> (any Sendable)?

    /// Decodes error bodies as `type` with the client's JSON decoder.
    public init<E: Decodable & Sendable>(_ type: E.Type) {
        decode = { data, decoder in try? decoder.decode(E.self, from: data) }
    }

    /// Decodes error bodies with a closure; return `nil` when the body is not an API error.
    public init(_ decode: @escaping @Sendable (Data) -> (any Sendable)?) {
        self.decode = { data, _ in decode(data) }
    }
}

/// A response type that Courier decodes itself rather than as JSON.
protocol SpecialResponseBody {
    static func decodeSpecial(
        from data: Data,
        response: HTTPURLResponse,
        context: ResponseDecodingContext
    ) throws -> Self
}

enum ResponseDecoding {
    static func decode<T: Decodable>(
        _ type: T.Type,
        from data: Data,
        response: HTTPURLResponse,
        context: ResponseDecodingContext
    ) throws -> T {
        if let special = T.self as? any SpecialResponseBody.Type {
            // The cast cannot fail: `special` is `T.self`.
            // swift-format-ignore: NeverForceUnwrap
            return try special.decodeSpecial(from: data, response: response, context: context) as! T
        }
        guard !data.isEmpty else {
            throw CourierError(
                .decodingFailed,
                message: "the response body was empty, so it cannot be decoded as \(T.self)"
                    + " (use an Optional or EmptyResponse for endpoints that may return no body)",
                request: context.request,
                response: response,
                body: data
            )
        }
        do {
            return try context.decoder.decode(T.self, from: data)
        } catch {
            throw CourierError(
                .decodingFailed,
                message: "the response body could not be decoded as \(T.self): \(describe(error))",
                request: context.request,
                response: response,
                body: data,
                underlying: error
            )
        }
    }

    /// Whether a response carries no content: 204, 205, a HEAD request, or an empty body.
    static func hasNoContent(_ data: Data, _ response: HTTPURLResponse, _ context: ResponseDecodingContext) -> Bool {
        data.isEmpty || response.statusCode == 204 || response.statusCode == 205
            || context.request?.httpMethod == "HEAD"
    }

    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        switch error {
        case .keyNotFound(let key, let context):
            return "key \"\(key.stringValue)\" not found at \(path(context.codingPath))"
        case .typeMismatch(let type, let context):
            return "type mismatch for \(type) at \(path(context.codingPath)): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "value of type \(type) not found at \(path(context.codingPath))"
        case .dataCorrupted(let context):
            return "data corrupted at \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "the top level" : codingPath.map(\.stringValue).joined(separator: ".")
    }
}

extension Data: SpecialResponseBody {
    static func decodeSpecial(from data: Data, response: HTTPURLResponse, context: ResponseDecodingContext) -> Data {
        data
    }
}

extension String: SpecialResponseBody {
    static func decodeSpecial(
        from data: Data,
        response: HTTPURLResponse,
        context: ResponseDecodingContext
    ) throws -> String {
        guard let text = String(data: data, encoding: .utf8) else {
            throw CourierError(
                .decodingFailed,
                message: "the response body is not valid UTF-8 text",
                request: context.request,
                response: response,
                body: data
            )
        }
        return text
    }
}

extension EmptyResponse: SpecialResponseBody {
    static func decodeSpecial(
        from data: Data,
        response: HTTPURLResponse,
        context: ResponseDecodingContext
    ) -> EmptyResponse {
        EmptyResponse()
    }
}

extension Optional: SpecialResponseBody where Wrapped: Decodable {
    static func decodeSpecial(
        from data: Data,
        response: HTTPURLResponse,
        context: ResponseDecodingContext
    ) throws -> Wrapped? {
        if ResponseDecoding.hasNoContent(data, response, context) { return nil }
        return try ResponseDecoding.decode(Wrapped.self, from: data, response: response, context: context)
    }
}
