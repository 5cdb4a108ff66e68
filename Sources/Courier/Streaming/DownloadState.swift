import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bookkeeping of one download, as a value: bytes written, the complete length of the version being written,
/// the validator that ties a resumed part to it, and what to do with the answer to a range request.
///
/// Parts of different versions are never combined: a `206` is appended only when it carries the same strong
/// validator (RFC 9110 §13.1.5: a weak entity tag never validates a range), starts at the byte asked for, and
/// states the same complete length as the part already written. Anything else starts the file again from zero.
struct DownloadState {
    /// What ties a resumed part to the version already written: sent as `If-Range`, and required again in the
    /// `206`.
    enum Validator: Equatable {
        /// A strong entity tag, as the server wrote it (`"v1"`, quotes included).
        case entityTag(String)
        /// A `Last-Modified` date that is strong: the response's `Date` is at least a second later (RFC 9110
        /// §8.8.2.2), so the resource cannot have changed twice within it unseen.
        case lastModified(String)

        /// The `If-Range` value.
        var headerValue: String {
            switch self {
            case .entityTag(let tag): tag
            case .lastModified(let date): date
            }
        }

        /// Whether `response` carries this validator: the same strong entity tag, character for character, or the
        /// same `Last-Modified`.
        func matches(_ response: HTTPURLResponse) -> Bool {
            switch self {
            case .entityTag(let tag): response.value(forHTTPHeaderField: "ETag")?.hasSameBytes(as: tag) ?? false
            case .lastModified(let date):
                response.value(forHTTPHeaderField: "Last-Modified")?.hasSameBytes(as: date) ?? false
            }
        }
    }

    /// What to do with the answer to a range request.
    enum Resumption: Equatable {
        /// A `206` with the rest of the same version: append its body.
        case append
        /// A `200`: the whole resource, perhaps a new version; write its body from byte zero.
        case restart
        /// A `206` that is not the rest of the same version, or a `416`: send the request again without a range
        /// and write the answer from byte zero.
        case startOver
        /// A status that carries no part of the resource (a `204`, say): the download fails.
        case fail
    }

    private(set) var bytesWritten: Int64 = 0
    /// The complete length of the version being written, when known; never the length of a body the transport
    /// decoded (`Content-Encoding`), whose bytes are not the ones counted.
    private(set) var expectedBytes: Int64?
    /// The validator for `If-Range`; `nil` when the download cannot be resumed.
    private(set) var validator: Validator?

    /// Takes the length and validator of a full response: the first one, or one that started the file over. Only
    /// a `200` whose body the transport did not decode can be resumed, because the range positions count the
    /// bytes the server sends.
    mutating func begin(with response: HTTPURLResponse) {
        bytesWritten = 0
        let encoded = Self.isEncoded(response)
        expectedBytes =
            encoded ? nil : response.value(forHTTPHeaderField: "Content-Length").flatMap { NetworkNumber.integer($0) }
        validator = nil
        guard response.statusCode == 200, !encoded else { return }
        if let tag = response.value(forHTTPHeaderField: "ETag"), !tag.hasPrefix("W/"), !tag.isEmpty {
            validator = .entityTag(tag)
        } else if let lastModified = response.value(forHTTPHeaderField: "Last-Modified"),
            let date = response.value(forHTTPHeaderField: "Date"),
            let modifiedAt = RetryAfter.httpDate(Array(lastModified.utf8), now: Date()),
            let sentAt = RetryAfter.httpDate(Array(date.utf8), now: Date()),
            sentAt - modifiedAt >= 1
        {
            validator = .lastModified(lastModified)
        }
    }

    /// Takes up a partial file that a resumable download kept: `bytesWritten` bytes of the version `record` names.
    /// The next request asks for the rest with `Range` and `If-Range`, and its answer goes through
    /// ``resumption(for:)`` like any resumed request's.
    mutating func restore(bytesWritten: Int64, from record: DownloadResumeRecord) {
        self.bytesWritten = bytesWritten
        expectedBytes = record.completeLength
        validator = record.typedValidator
    }

    /// How far the download has come, for the progress handler.
    var progress: DownloadProgress {
        DownloadProgress(bytesWritten: bytesWritten, expectedBytes: expectedBytes)
    }

    /// Throws when a chunk of `count` bytes would take the file past the complete length: the bytes beyond it
    /// belong to no version, and the download is not resumed.
    func checkRoom(for count: Int, response: HTTPURLResponse) throws {
        guard let expectedBytes, Int64(count) > expectedBytes - bytesWritten else { return }
        throw Overrun(
            error: CourierError(
                .transport,
                message: "the server sent more than the \(expectedBytes) bytes of the resource",
                response: response
            )
        )
    }

    mutating func wrote(_ count: Int) {
        bytesWritten += Int64(count)
    }

    /// Throws ``ShortBody`` when the complete length is known and more bytes are missing.
    func checkLength(response: HTTPURLResponse) throws {
        guard let expectedBytes, bytesWritten < expectedBytes else { return }
        throw ShortBody(
            error: CourierError(
                .transport,
                message: "the download ended after \(bytesWritten) of the \(expectedBytes) bytes announced",
                response: response
            )
        )
    }

    /// What to do with `response`, the answer to `Range: bytes=<bytesWritten>-` with `If-Range`; an `append`
    /// takes the part's complete length as the download's.
    mutating func resumption(for response: HTTPURLResponse) -> Resumption {
        switch response.statusCode {
        case 200:
            return .restart
        case 206:
            guard let validator, validator.matches(response), !Self.isEncoded(response),
                let range = response.value(forHTTPHeaderField: "Content-Range").flatMap({ ContentRange($0) }),
                range.first == bytesWritten,
                let completeLength = range.completeLength,
                expectedBytes == nil || expectedBytes == completeLength
            else { return .startOver }
            expectedBytes = completeLength
            return .append
        case 416:
            // The range starts past the end: the resource is shorter now, another version.
            return .startOver
        default:
            return .fail
        }
    }

    /// The error for a response that carries no part of the resource where one was needed.
    func unexpected(_ response: HTTPURLResponse, resumed: Bool) -> CourierError {
        CourierError(
            .unacceptableStatus,
            message: resumed
                ? "the server answered the resumed download with \(response.statusCode), not 206 or 200"
                : "the server answered the download with \(response.statusCode), not a whole file",
            response: response
        )
    }

    /// What a body that stopped with `error` throws: a ``CourierError`` or `CancellationError` as it is, any
    /// other error (the transport's own) as a ``CourierError/Code/transport`` error around it.
    func failure(_ error: any Error, response: HTTPURLResponse) -> any Error {
        if let short = error as? ShortBody { return short.error }
        guard !(error is CourierError), !(error is CancellationError) else { return error }
        let announced = expectedBytes.map { " of the \($0) announced" } ?? ""
        return CourierError(
            .transport,
            message: "the download stopped after \(bytesWritten) bytes\(announced)",
            response: response,
            underlying: error
        )
    }

    /// Whether the transport decoded the body (`Content-Encoding` other than `identity`).
    private static func isEncoded(_ response: HTTPURLResponse) -> Bool {
        guard let coding = response.value(forHTTPHeaderField: "Content-Encoding") else { return false }
        let trimmed = coding.trimmingCharacters(in: .whitespaces).lowercased()
        return !trimmed.isEmpty && trimmed != "identity"
    }

    /// A body that ended before its complete length: resumed like a lost connection, and thrown as its
    /// ``CourierError`` when it cannot be.
    struct ShortBody: Error {
        let error: CourierError
    }

    /// A body that ran past the complete length: thrown as its ``CourierError``, never resumed.
    struct Overrun: Error {
        let error: CourierError
    }
}
