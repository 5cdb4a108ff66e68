public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// How far a download has come.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes of the body written to the file so far.
    public var bytesWritten: Int64
    /// The body's length, when the server announced it.
    public var expectedBytes: Int64?

    /// The fraction done, from 0 to 1, when the length is known.
    public var fractionCompleted: Double? {
        guard let expectedBytes, expectedBytes > 0 else { return nil }
        return Double(bytesWritten) / Double(expectedBytes)
    }
}

extension Client {
    /// Downloads the body of `request` into the file at `destination`, chunk by chunk, never holding the body in
    /// memory; resumes with `Range` after a lost connection when the server allows it.
    ///
    /// ```swift
    /// let response = try await client.download(
    ///     .get("/exports/2026.tar.gz"),
    ///     to: URL(filePath: "/var/data/2026.tar.gz"),
    ///     idleTimeout: .seconds(60),
    ///     progress: { print("\(Int(($0.fractionCompleted ?? 0) * 100)) %") }
    /// )
    /// ```
    ///
    /// The call is a ``stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)``, so it passes through the
    /// middleware (an expired token is refreshed, a `503` before the body is retried) and a status the request
    /// does not accept throws.
    ///
    /// - **The file** is written next to `destination` under a temporary name and moved into place once the
    ///   whole body has arrived, replacing a file already there. If the download fails or is cancelled, the
    ///   temporary file is removed and `destination` is left as it was.
    /// - **Resuming**: when the body stops early (the connection is lost or cut, no chunk arrives within the idle
    ///   timeout, the transport gives up on it), and the first response carried a strong `ETag` or a
    ///   `Last-Modified`, the request is sent again with `Range: bytes=N-` and `If-Range`, up to
    ///   `resumeAttempts` times. A `206` whose `Content-Range` starts at byte `N` is appended; a `200` (the
    ///   resource changed, or the server ignores ranges) starts the file over. Without a validator the error is
    ///   thrown: appending bytes of a different version would corrupt the file.
    /// - **Length**: when the server announced a `Content-Length`, a body that ends short of it is an error
    ///   (or resumed), never a truncated file.
    ///
    /// - Parameters:
    ///   - request: The request for the resource.
    ///   - destination: A file URL.
    ///   - resumeAttempts: How many times to resume after the body stops early; 3 by default, 0 for never.
    ///   - idleTimeout: The longest the body may go without a chunk before it counts as stopped.
    ///   - progress: Called after each chunk is written, and when a resumed download restarts.
    /// - Returns: The response head of the first response.
    /// - Throws: What ``stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)`` throws, a body's
    ///   ``CourierError`` (an idle timeout's ``CourierError/Code/timedOut``, say), ``CourierError/Code/transport``
    ///   for a body that stopped early or short of its length and cannot be resumed (the transport's own error
    ///   underneath), or the file system's error.
    public nonisolated func download(
        _ request: Request<Data>,
        to destination: URL,
        resumeAttempts: Int = 3,
        idleTimeout: Duration? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> HTTPURLResponse {
        precondition(destination.isFileURL, "a download's destination must be a file URL")
        precondition(resumeAttempts >= 0, "resumeAttempts must not be negative")
        let partial = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).download")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: partial.path])
        }
        let file = try FileHandle(forWritingTo: partial)
        var isComplete = false
        defer {
            try? file.close()
            if !isComplete { try? FileManager.default.removeItem(at: partial) }
        }
        var download = Download(progress: progress)
        var (body, first) = try await stream(request, idleTimeout: idleTimeout)
        download.begin(with: first)
        var resumesLeft = resumeAttempts
        while true {
            do {
                for try await chunk in body {
                    do {
                        try file.write(contentsOf: chunk)
                    } catch {
                        throw FileFailure(error: error)
                    }
                    download.wrote(chunk.count)
                }
                try download.checkLength(request: first)
                break
            } catch let failure as FileFailure {
                throw failure.error
            } catch let error where resumesLeft > 0 && !(error is CancellationError) && !Task.isCancelled {
                // The body stopped early, whatever the reason: a lost connection (Courier's transports report it
                // as a transport error, a third party's transport in its client's words, transient or not), an
                // idle timeout, a transport that gave up on a reader that fell behind. The range request resumes
                // it either way.
                let error = download.failure(error, response: first)
                guard let validator = download.validator else { throw error }
                resumesLeft -= 1
                var again = request
                again.headers["Range"] = "bytes=\(download.bytesWritten)-"
                again.headers["If-Range"] = validator
                let response: HTTPURLResponse
                (body, response) = try await stream(again, idleTimeout: idleTimeout)
                if response.statusCode == 206 {
                    guard download.continues(with: response) else {
                        body.cancel()
                        throw CourierError(
                            .transport,
                            message: "the server resumed the download at another byte than \(download.bytesWritten)",
                            response: response,
                            underlying: error
                        )
                    }
                } else {
                    // A 200: the whole resource again, perhaps a new version of it.
                    try file.truncate(atOffset: 0)
                    download.restart(with: response)
                }
            } catch {
                throw download.failure(error, response: first)
            }
        }
        try file.synchronize()
        try file.close()
        _ = try? FileManager.default.removeItem(at: destination)
        try FileManager.default.moveItem(at: partial, to: destination)
        isComplete = true
        return first
    }
}

/// The bookkeeping of one download: bytes written, the expected length, the validator for `If-Range`.
private struct Download {
    let progress: (@Sendable (DownloadProgress) -> Void)?
    var bytesWritten: Int64 = 0
    var expectedBytes: Int64?
    var validator: String?

    init(progress: (@Sendable (DownloadProgress) -> Void)?) {
        self.progress = progress
    }

    mutating func begin(with response: HTTPURLResponse) {
        let length = response.expectedContentLength
        expectedBytes = length >= 0 ? length : nil
        if let etag = response.value(forHTTPHeaderField: "ETag"), !etag.hasPrefix("W/") {
            validator = etag
        } else {
            validator = response.value(forHTTPHeaderField: "Last-Modified")
        }
    }

    mutating func wrote(_ count: Int) {
        bytesWritten += Int64(count)
        progress?(DownloadProgress(bytesWritten: bytesWritten, expectedBytes: expectedBytes))
    }

    /// Whether a `206` continues at the byte written next (`Content-Range: bytes N-…/total`).
    func continues(with response: HTTPURLResponse) -> Bool {
        guard let range = response.value(forHTTPHeaderField: "Content-Range"),
            range.lowercased().hasPrefix("bytes "),
            let start = range.dropFirst(6).split(separator: "-").first.flatMap({ Int64($0) })
        else { return false }
        return start == bytesWritten
    }

    mutating func restart(with response: HTTPURLResponse) {
        bytesWritten = 0
        begin(with: response)
        progress?(DownloadProgress(bytesWritten: 0, expectedBytes: expectedBytes))
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

    /// Throws ``ShortBody`` when the server announced more bytes than arrived.
    func checkLength(request response: HTTPURLResponse) throws {
        guard let expectedBytes, bytesWritten < expectedBytes else { return }
        throw ShortBody(
            error: CourierError(
                .transport,
                message: "the download ended after \(bytesWritten) of the \(expectedBytes) bytes announced",
                response: response
            )
        )
    }
}

/// A body that ended before its announced length: resumed like a lost connection, and thrown as its
/// ``CourierError`` when it cannot be.
private struct ShortBody: Error {
    let error: CourierError
}

/// The file system's error while writing the body: thrown as it is, never resumed.
private struct FileFailure: Error {
    let error: any Error
}
