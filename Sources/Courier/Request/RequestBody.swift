public import Foundation

/// The body of a ``Request``: JSON from an `Encodable` value, an HTML form, or raw bytes.
public struct RequestBody: Sendable {
    enum Storage: Sendable {
        case json(any Encodable & Sendable, encoder: JSONEncoder?)
        case form([URLQueryItem])
        case data(Data, contentType: String?)
    }

    let storage: Storage

    /// A JSON body encoded from `value` with `encoder`, or with the client's encoder when `nil`.
    ///
    /// The `Content-Type` is `application/json` unless the request sets one.
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - encoder: The encoder; `nil` uses the client's.
    public static func json(_ value: some Encodable & Sendable, encoder: JSONEncoder? = nil) -> RequestBody {
        RequestBody(storage: .json(value, encoder: encoder))
    }

    /// An `application/x-www-form-urlencoded` body.
    ///
    /// Names and values are percent-encoded per RFC 3986: everything but unreserved characters
    /// (`A–Z a–z 0–9 - . _ ~`) is encoded, so a space is `%20` (not `+`), and `+`, `&`, `=` are encoded.
    /// Every server that accepts the form encoding decodes this.
    ///
    /// - Parameter items: The fields, in order; repeated names are kept.
    public static func form(_ items: [URLQueryItem]) -> RequestBody {
        RequestBody(storage: .form(items))
    }

    /// An `application/x-www-form-urlencoded` body from a dictionary (fields sorted by name, so the body
    /// is deterministic).
    public static func form(_ fields: [String: String]) -> RequestBody {
        form(fields.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) })
    }

    /// Raw bytes with a content type.
    ///
    /// - Parameters:
    ///   - data: The bytes.
    ///   - contentType: The `Content-Type`, for example `"application/octet-stream"`, or `nil` for none.
    public static func data(_ data: Data, contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(storage: .data(data, contentType: contentType))
    }

    /// UTF-8 text with a content type.
    public static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> RequestBody {
        RequestBody(storage: .data(Data(text.utf8), contentType: contentType))
    }

    /// Encodes the body, returning the bytes and the content type to use when the request sets none.
    func encoded(with defaultEncoder: JSONEncoder) throws -> (Data, contentType: String?) {
        switch storage {
        case .json(let value, let encoder):
            return (try (encoder ?? defaultEncoder).encode(value), "application/json")
        case .form(let items):
            return (Data(PercentEncoding.formEncoded(items).utf8), "application/x-www-form-urlencoded")
        case .data(let data, let contentType):
            return (data, contentType)
        }
    }
}
