import Foundation

/// What a resumable download keeps beside its partial file, so that a later call — in another process, after a
/// restart — can ask for the rest of the same version: the validator for `If-Range`, the complete length, and a
/// digest of the request (its method and URL, which may carry a key, so only a digest is kept).
///
/// It is written when a version starts, while the partial file is empty, and replaced (never edited) by a rename,
/// so the partial file's bytes are always a prefix of the version it names. A record that cannot be read, does not
/// decode, is of another format or request, or says something impossible is ignored: the download starts from 0.
struct DownloadResumeRecord: Codable, Equatable {
    /// The format of the record; another one is ignored.
    static let currentFormat = 1
    /// The longest record read; a larger file is not one of Courier's.
    static let maximumSize = 16 << 10

    var format: Int
    /// ``digest(of:)`` of the request.
    var request: String
    /// `etag` or `lastModified`.
    var validatorKind: String
    /// The `ETag` (quotes included) or `Last-Modified` value, as the server wrote it.
    var validator: String
    /// The complete length of the version, when it was announced.
    var completeLength: Int64?

    init(request: String, validator: DownloadState.Validator, completeLength: Int64?) {
        format = Self.currentFormat
        self.request = request
        switch validator {
        case .entityTag(let tag): (validatorKind, self.validator) = ("etag", tag)
        case .lastModified(let date): (validatorKind, self.validator) = ("lastModified", date)
        }
        self.completeLength = completeLength
    }

    /// The record in `data`, if it is a well-formed record of the current format for `request`.
    static func decode(_ data: Data, for request: String) -> DownloadResumeRecord? {
        guard data.count <= maximumSize,
            let record = try? JSONDecoder().decode(DownloadResumeRecord.self, from: data),
            record.format == currentFormat,
            record.request == request,
            record.typedValidator != nil,
            record.completeLength.map({ $0 > 0 }) ?? true
        else { return nil }
        return record
    }

    var encoded: Data {
        // Encoding strings and integers cannot fail.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// The validator, when the record's is well formed: a strong entity tag, or a date.
    var typedValidator: DownloadState.Validator? {
        guard !validator.isEmpty, validator.utf8.count <= 1024,
            !validator.contains(where: { $0.isNewline || $0 == "\0" })
        else { return nil }
        switch validatorKind {
        case "etag" where !validator.hasPrefix("W/"):
            return .entityTag(validator)
        case "lastModified":
            return .lastModified(validator)
        default:
            return nil
        }
    }

    /// A digest of `method` and `url` (64-bit FNV-1a, in hex): it tells requests apart without keeping a URL,
    /// which may carry a key, in a file.
    static func digest(method: String, url: URL) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(method) \(url.absoluteString)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
