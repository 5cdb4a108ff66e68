public import Foundation

/// The body of a ``Request``: JSON from an `Encodable` value, an HTML form, raw bytes, or a streamed upload
/// (a file, a stream factory, a multipart form; see <doc:Uploads>).
public struct RequestBody: Sendable {
    enum Storage: Sendable {
        case json(any Encodable & Sendable, encoder: JSONEncoder?)
        case form([URLQueryItem])
        case data(Data, contentType: String?)
        case file(URL, contentType: String?)
        case stream(UploadSource, contentType: String?)
        case multipart(MultipartForm)
    }

    /// What an encoded body is sent as.
    enum Encoded {
        /// Bytes, sent as `httpBody`.
        case data(Data)
        /// A replayable stream, sent as `httpBodyStream`.
        case stream(UploadSource)
    }

    let storage: Storage
    /// Told as the transport reads the body; see ``onUploadProgress(_:)``.
    var progress: (@Sendable (UploadProgress) -> Void)?

    init(storage: Storage) {
        self.storage = storage
    }

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

    /// Whether the body can be sent again: everything but a stream or a multipart part made to be read once.
    var isReplayable: Bool {
        switch storage {
        case .json, .form, .data, .file: true
        case .stream(let source, _): source.isReplayable
        case .multipart(let form):
            form.parts.allSatisfy { part in
                if case .stream(let chunks) = part.content { chunks.isReplayable } else { true }
            }
        }
    }

    /// Encodes the body, returning what to send and the content type to use when the request sets none.
    ///
    /// A body with a progress handler is always a stream, so that the transport's reads can be counted.
    func encoded(with defaultEncoder: JSONEncoder) throws -> (Encoded, contentType: String?) {
        let bytes: Data
        let contentType: String?
        switch storage {
        case .json(let value, let encoder):
            (bytes, contentType) = (try (encoder ?? defaultEncoder).encode(value), "application/json")
        case .form(let items):
            (bytes, contentType) = (Data(PercentEncoding.formEncoded(items).utf8), "application/x-www-form-urlencoded")
        case .data(let data, let type):
            (bytes, contentType) = (data, type)
        case .file(let url, let type):
            return (.stream(UploadSource(segments: [try UploadSource.fileSegment(at: url)], progress: progress)), type)
        case .stream(var source, let type):
            source.progress = progress
            return (.stream(source), type)
        case .multipart(let form):
            return (.stream(UploadSource(segments: try form.segments(), progress: progress)), form.contentType)
        }
        guard let progress else { return (.data(bytes), contentType) }
        return (.stream(UploadSource(segments: [.bytes(bytes)], progress: progress)), contentType)
    }
}
