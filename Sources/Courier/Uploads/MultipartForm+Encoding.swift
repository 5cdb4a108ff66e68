import Foundation

extension MultipartForm {
    /// The form as segments: each part's head as bytes, then its content (bytes, the file to read, or the
    /// stream part's chunks), then the closing delimiter. Files are checked and measured here, so a missing one
    /// fails before sending.
    ///
    /// - Throws: ``UploadError`` for an invalid boundary or header, or a file that cannot be read.
    func segments() throws -> [UploadSource.Segment] {
        try Self.validate(boundary: boundary)
        var segments: [UploadSource.Segment] = []
        var head = ""
        for part in parts {
            head += "--\(boundary)\r\n"
            head += "Content-Disposition: form-data; name=\"\(Self.escaped(part.name))\""
            if let filename = part.filename {
                head += "; filename=\"\(Self.escaped(filename))\""
            }
            head += "\r\n"
            if let contentType = part.contentType {
                try Self.validateHeader("Content-Type", contentType)
                head += "Content-Type: \(contentType)\r\n"
            }
            for field in part.headers {
                let lowered = field.name.lowercased()
                guard lowered != "content-disposition", lowered != "content-type" else {
                    throw UploadError("a part's \(field.name) comes from its name, filename and content type")
                }
                try Self.validateHeader(field.name, field.value)
                head += "\(field.name): \(field.value)\r\n"
            }
            head += "\r\n"
            segments.append(.bytes(Data(head.utf8)))
            switch part.content {
            case .data(let data):
                segments.append(.bytes(data))
            case .file(let url):
                segments.append(try UploadSource.fileSegment(at: url))
            case .stream(let chunks):
                segments.append(.stream(chunks))
            }
            head = "\r\n"
        }
        head += "--\(boundary)--\r\n"
        segments.append(.bytes(Data(head.utf8)))
        return segments
    }

    /// A name or filename for a quoted `Content-Disposition` parameter: UTF-8, with `"`, CR and LF
    /// percent-encoded, as browsers do (and RFC 7578 §4.2 allows).
    static func escaped(_ value: String) -> String {
        // By bytes: a quote followed by a combining mark or a joiner is one `Character` that is not `"`.
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == 0x0D || $0 == 0x0A }) else {
            return value
        }
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// RFC 2046 §5.1.1: 1 to 70 characters from `bchars`, the last not a space. By bytes: a `Character` set
    /// compares canonically, and takes the Kelvin sign (U+212A) for `K`.
    static func validate(boundary: String) throws {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)
        let bytes = boundary.utf8
        guard (1...70).contains(bytes.count), bytes.allSatisfy(allowed.contains), bytes.last != UInt8(ascii: " ")
        else {
            throw UploadError(
                "the multipart boundary must be 1 to 70 letters, digits or '()+_,-./:=? characters, not ending in a space"
            )
        }
    }

    private static func validateHeader(_ name: String, _ value: String) throws {
        do {
            try RequestValidation.validateHeader(name: name, value: value)
        } catch let error as CourierError {
            throw UploadError("a multipart part's header is invalid: \(error.message)")
        }
    }
}
