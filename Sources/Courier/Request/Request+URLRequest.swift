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
        // A new request's method is GET already; setting it costs FoundationNetworking a case-insensitive
        // comparison through `NSString` (≈ 4,000 instructions on Linux, Benchmarks/RESULTS.md).
        if method != .get {
            request.httpMethod = method.rawValue
        }
        try RequestValidation.validateMethod(method.rawValue, request: request)
        for field in headers {
            try RequestValidation.validateHeader(name: field.name, value: field.value)
            HeaderFieldJoining.add(field.value, to: field.name, in: &request)
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
                // Checked as the header fields are: FoundationNetworking drops a value with CR or LF silently, and
                // Darwin's Foundation keeps it (header injection).
                try RequestValidation.validateHeader(name: "Content-Type", value: contentType, request: request)
                request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            }
        }
        return request
    }

    func makeURL(baseURL: URL?) throws -> URL {
        var string: String
        switch target {
        case .url(let url):
            // An absolute URL with nothing to add is the URL its string parses to again: used as it is, it is not
            // printed and parsed once more (≈ 3,000 instructions).
            if query.isEmpty, url.baseURL == nil, RequestValidation.isAbsolute(url) {
                return url
            }
            string = url.absoluteString
        case .path(let path):
            // Scanned as UTF-8: these control characters and the delimiters `join` looks for are single bytes that
            // no other character's encoding contains.
            guard !path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
                throw CourierError.invalidRequest("the path contains a control character", request: nil)
            }
            if Self.startsWithHTTPScheme(path) {
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

    /// Whether `path` starts with `http://` or `https://`, in any letter case: an absolute URL written as a path
    /// (then parsed as one, and refused if it is not). Read as UTF-8, so a combining mark after the `//` does not
    /// hide the scheme.
    static func startsWithHTTPScheme(_ path: String) -> Bool {
        var bytes = path.utf8.makeIterator()
        for expected in "http".utf8 {
            // ASCII letters only: `| 0x20` lowercases them, and maps no other byte onto one.
            guard let byte = bytes.next(), byte | 0x20 == expected else { return false }
        }
        var next = bytes.next()
        if let byte = next, byte | 0x20 == UInt8(ascii: "s") { next = bytes.next() }
        return next == UInt8(ascii: ":") && bytes.next() == UInt8(ascii: "/") && bytes.next() == UInt8(ascii: "/")
    }

    /// `base` + `/` + `path`, with the path (and any query written into it) percent-encoded.
    ///
    /// Works on the strings' UTF-8: `?`, `#` and `/` are single bytes that no other character's encoding contains,
    /// so the indices found are character boundaries. (A `?` or `/` followed by a combining mark is a delimiter here,
    /// as it is to a URL parser, where comparing `Character`s saw one character that is neither.)
    static func join(base: String, path: String) -> String {
        let question = UInt8(ascii: "?")
        let slash = UInt8(ascii: "/")
        let baseBytes = base.utf8
        var baseEnd = baseBytes.firstIndex { $0 == question || $0 == UInt8(ascii: "#") } ?? baseBytes.endIndex
        while baseEnd > baseBytes.startIndex, case let before = baseBytes.index(before: baseEnd),
            baseBytes[before] == slash
        {
            baseEnd = before
        }
        let pathBytes = path.utf8
        let questionMark = pathBytes.firstIndex(of: question)
        let pathEnd = questionMark ?? pathBytes.endIndex
        var pathStart = pathBytes.startIndex
        while pathStart < pathEnd, pathBytes[pathStart] == slash {
            pathStart = pathBytes.index(after: pathStart)
        }
        var result = String(base[..<baseEnd])
        result += "/"
        result += PercentEncoding.encodePath(String(path[pathStart..<pathEnd]))
        if let questionMark {
            result += "?"
            result += PercentEncoding.encodeQueryString(String(path[pathBytes.index(after: questionMark)...]))
        }
        return result
    }
}
