import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Public values that hold URLs, header fields or bodies describe themselves, and show `dump` and debuggers,
// redacted: a user who prints one, or an error that quotes one, prints no credential, user-info or signed query.

extension RedirectHop: CustomStringConvertible, CustomReflectable {
    /// The hop's number, the status that asked for it, and both URLs redacted, for example
    /// `hop 1 (302) https://api.example.com/files/7 → https://bucket.example/f?X-Amz-Signature=REDACTED`.
    public var description: String {
        "hop \(number) (\(status)) \(Redaction.redactedURL(originalURL)) → \(Redaction.redactedURL(url))"
            + (hasLeftOriginalOrigin ? ", another origin" : "")
    }

    /// The URLs redacted, as ``description`` shows them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "originalURL": Redaction.redactedURL(originalURL), "url": Redaction.redactedURL(url), "number": number,
                "status": status, "hasLeftOriginalOrigin": hasLeftOriginalOrigin,
            ],
            displayStyle: .struct
        )
    }
}

extension HTTPHeaders: CustomStringConvertible, CustomReflectable {
    /// The fields in order, `Name: value` separated by commas, with the values of credential headers
    /// (``CredentialHeaders``) replaced by `<redacted>` and known secrets scrubbed from the others.
    public var description: String {
        "[" + fields.map(\.description).joined(separator: ", ") + "]"
    }

    /// The fields, redacted as ``description`` shows them.
    public var customMirror: Mirror {
        Mirror(self, unlabeledChildren: fields, displayStyle: .collection)
    }
}

extension HTTPHeaders.Field: CustomStringConvertible, CustomReflectable {
    /// `Name: value`, the value redacted when the name is a credential header's.
    public var description: String { "\(name): \(redactedValue)" }

    /// The name, and the value redacted as ``description`` shows it.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": name, "value": redactedValue], displayStyle: .struct)
    }

    private var redactedValue: String {
        Redaction.isSensitiveHeader(name) ? Redaction.placeholder : Redaction.redactedText(value)
    }
}

extension Request: CustomStringConvertible, CustomReflectable {
    /// The method and the target with the query, redacted, for example `GET /users/42?token=REDACTED`; the
    /// header fields and the body are shown by ``customMirror``, redacted.
    public var description: String {
        // The query encoded as the request will send it.
        let query = query.isEmpty ? "" : "?" + PercentEncoding.formEncoded(query)
        let target: String
        switch self.target {
        case .path(let path): target = path
        case .url(let url): target = url.absoluteString
        }
        return RequestValidation.printableMethod(method.rawValue) + " " + Redaction.redactedURLString(target + query)
    }

    /// The method and target as ``description`` shows them, the header fields redacted, and the body by its
    /// kind; never a header's credential, a query's secret or the body's content.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "request": description, "headers": headers, "body": body as Any, "timeout": timeout as Any,
                "acceptableStatus": acceptableStatus,
            ],
            displayStyle: .struct
        )
    }
}

extension RequestBody: CustomStringConvertible, CustomReflectable {
    /// The body's kind and what can be told without its content, for example `form (2 fields)`.
    public var description: String {
        switch storage {
        case .json: "JSON"
        case .form(let items): "form (\(items.count) fields)"
        case .data(let data, _): "\(data.count) bytes"
        case .file: "a file"
        case .stream: "a stream"
        case .multipart(let form): "multipart (\(form.parts.count) parts)"
        }
    }

    /// ``description`` only: never the content.
    public var customMirror: Mirror {
        Mirror(self, children: ["body": description], displayStyle: .struct)
    }
}

extension HTTPCacheKey: CustomReflectable {
    /// The partition and the resource redacted, as ``description`` shows them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["partition": partition, "resource": Redaction.redactedURLString(resource)],
            displayStyle: .struct
        )
    }
}

extension CacheEvent: CustomReflectable {
    /// The kind, the method and the URL redacted, as ``description`` shows them.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["kind": kind, "method": method, "url": Redaction.redactedURL(url)],
            displayStyle: .struct
        )
    }
}
