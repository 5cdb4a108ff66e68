public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension Request {
    /// Builds the `URLRequest` this request describes.
    ///
    /// - Parameters:
    ///   - baseURL: The URL paths are relative to; required unless the target is absolute.
    ///   - encoder: The encoder for JSON bodies that do not bring their own.
    /// - Throws: ``CourierError/Code/invalidRequest`` when no valid URL can be formed, or the method or a
    ///   header is invalid, ``CourierError/Code/encodingFailed`` when the body cannot be encoded.
    public func urlRequest(baseURL: URL?, encoder: JSONEncoder = JSONEncoder()) throws -> URLRequest {
        let url = try makeURL(baseURL: baseURL)
        var request = URLRequest(url: url)
        request.httpMethod = method.rawValue
        try RequestValidation.validateMethod(method.rawValue, request: request)
        for field in headers {
            try RequestValidation.validateHeader(name: field.name, value: field.value)
            if request.value(forHTTPHeaderField: field.name) == nil {
                request.setValue(field.value, forHTTPHeaderField: field.name)
            } else {
                request.addValue(field.value, forHTTPHeaderField: field.name)
            }
        }
        if let body {
            let encoded: RequestBody.Encoded
            let contentType: String?
            do {
                (encoded, contentType) = try body.encoded(with: encoder)
            } catch {
                throw CourierError(
                    .encodingFailed,
                    message: "the request body could not be encoded"
                        + ((error as? UploadError).map { ": \($0.description)" } ?? ""),
                    request: request,
                    underlying: error
                )
            }
            switch encoded {
            case .data(let data): request.httpBody = data
            case .stream(let source): request.httpBodyStream = UploadBodyStream(source)
            }
            if let contentType, request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            }
        }
        return request
    }

    func makeURL(baseURL: URL?) throws -> URL {
        var string: String
        switch target {
        case .url(let url):
            string = url.absoluteString
        case .path(let path):
            guard !path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw CourierError.invalidRequest("the path contains a control character", request: nil)
            }
            let head = path.prefix(8).lowercased()
            if head.hasPrefix("http://") || head.hasPrefix("https://") {
                string = path
            } else {
                guard let baseURL else {
                    throw CourierError.invalidRequest(
                        "the path \"\(Redaction.redactedText(String(path.prefix(100))))\" is relative but the client has no base URL",
                        request: nil
                    )
                }
                string = Self.join(base: baseURL.absoluteString, path: path)
            }
        }
        if !query.isEmpty {
            // The query goes before a fragment (`https://host/doc#part`), never into it.
            var fragment = ""
            if let hash = string.firstIndex(of: "#") {
                fragment = String(string[hash...])
                string = String(string[..<hash])
            }
            let encoded = PercentEncoding.formEncoded(query)
            if string.contains("?") {
                string += string.hasSuffix("?") || string.hasSuffix("&") ? encoded : "&" + encoded
            } else {
                string += "?" + encoded
            }
            string += fragment
        }
        guard let url = URL(string: string), RequestValidation.isAbsolute(url) else {
            throw CourierError.invalidRequest(
                "\"\(Redaction.redactedText(String(string.prefix(200))))\" is not a valid absolute URL",
                request: nil
            )
        }
        return url
    }

    /// `base` + `/` + `path`, with the path (and any query written into it) percent-encoded.
    private static func join(base: String, path: String) -> String {
        var base = base
        if let queryStart = base.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            base = String(base[..<queryStart])
        }
        while base.hasSuffix("/") { base.removeLast() }
        var pathPart = Substring(path)
        var queryPart: Substring?
        if let questionMark = path.firstIndex(of: "?") {
            pathPart = path[..<questionMark]
            queryPart = path[path.index(after: questionMark)...]
        }
        while pathPart.hasPrefix("/") { pathPart.removeFirst() }
        var result = base + "/" + PercentEncoding.encodePath(String(pathPart))
        if let queryPart {
            result += "?" + PercentEncoding.encodeQueryString(String(queryPart))
        }
        return result
    }
}
