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
    /// - **The file** is written next to `destination` under a new temporary name and renamed over it once the
    ///   whole body has arrived: an existing regular file is replaced in one step, never removed first. If the
    ///   download fails or is cancelled, the temporary file is removed and `destination` is left as it was.
    ///   A `204` or `205` (no content, by definition) throws ``CourierError/Code/unacceptableStatus`` rather than
    ///   replace the destination with an empty file, and so does a `206` to a request without a `Range` of the
    ///   caller's (a part where the whole was asked for). A `destination` that is a directory, a symbolic link (neither followed nor replaced: name its target),
    ///   a FIFO or a device, or whose directory cannot take a new file, throws
    ///   ``CourierError/Code/invalidRequest`` before anything is sent.
    /// - **Resuming**: when the body of a `200` stops early (the connection is lost or cut, no chunk arrives
    ///   within the idle timeout, the transport gives up on it), and the response carried a strong `ETag`, or a
    ///   `Last-Modified` at least a second before its `Date`, the request is sent again with `Range: bytes=N-`
    ///   and `If-Range`, up to `resumeAttempts` times. A `206` is appended only when it is the rest of the same
    ///   version: the same strong validator, a `Content-Range` that starts at byte `N`, and the same complete
    ///   length. Any other `206` (a proxy that ignores `If-Range` sends the new version's), or a `416`, starts
    ///   the file over with one more request, without a range; a `200` starts it over with its own body; a `204`
    ///   or any other status throws. Without a strong validator, or for a body the transport decoded
    ///   (`Content-Encoding`), the error is thrown: bytes of two versions are never combined.
    /// - **Length**: when the server announced a `Content-Length` (or a `Content-Range`'s complete length), a
    ///   body that ends short of it is an error (or resumed), never a truncated file, and one that runs past it
    ///   is an error.
    ///
    /// - Parameters:
    ///   - request: The request for the resource.
    ///   - destination: A file URL.
    ///   - resumeAttempts: How many times to resume after the body stops early; 3 by default, 0 for never. A
    ///     resumption sends at most two requests (the range request, and the request sent again from the start).
    ///   - idleTimeout: The longest the body may go without a chunk before it counts as stopped.
    ///   - progress: Called after each chunk is written, and when a resumed download restarts.
    /// - Returns: The response head of the version in the file: the first response's, or that of the response
    ///   that started the file over.
    /// - Throws: ``CourierError/Code/invalidRequest`` for a destination that cannot be written, what
    ///   ``stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)`` throws, a body's ``CourierError``
    ///   (an idle timeout's ``CourierError/Code/timedOut``, say), ``CourierError/Code/transport`` for a body that
    ///   stopped early or short of its length and cannot be resumed (the transport's own error underneath),
    ///   ``CourierError/Code/unacceptableStatus`` for a resumed request answered with no part of the resource, or
    ///   the file system's error.
    public nonisolated func download(
        _ request: Request<Data>,
        to destination: URL,
        resumeAttempts: Int = 3,
        idleTimeout: Duration? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> HTTPURLResponse {
        precondition(destination.isFileURL, "a download's destination must be a file URL")
        precondition(resumeAttempts >= 0, "resumeAttempts must not be negative")
        try DownloadFile.checkDestination(destination)
        let file = try DownloadFile(beside: destination)
        defer { file.discard() }
        var state = DownloadState()
        var (body, head) = try await stream(request, idleTimeout: idleTimeout)
        if head.statusCode == 204 || head.statusCode == 205
            || (head.statusCode == 206 && request.headers["Range"] == nil)
        {
            // No content, by definition: not an empty file to put in the destination's place. A part where no range
            // was asked for is not the file either (a server or cache that sends one breaks RFC 9110 §15.3.7).
            body.cancel()
            throw state.unexpected(head, resumed: false)
        }
        state.begin(with: head)
        var resumesLeft = resumeAttempts
        while true {
            do {
                for try await chunk in body {
                    try state.checkRoom(for: chunk.count, response: head)
                    do {
                        try file.write(chunk)
                    } catch {
                        throw FileFailure(error: error)
                    }
                    state.wrote(chunk.count)
                    progress?(state.progress)
                }
                try state.checkLength(response: head)
                break
            } catch let failure as FileFailure {
                throw failure.error
            } catch let overrun as DownloadState.Overrun {
                throw overrun.error
            } catch let error where resumesLeft > 0 && !(error is CancellationError) && !Task.isCancelled {
                // The body stopped early, whatever the reason: a lost connection (Courier's transports report it
                // as a transport error, a third party's transport in its client's words, transient or not), an
                // idle timeout, a transport that gave up on a reader that fell behind. The range request resumes
                // it either way.
                let error = state.failure(error, response: head)
                guard let validator = state.validator else { throw error }
                resumesLeft -= 1
                var again = request
                again.headers["Range"] = "bytes=\(state.bytesWritten)-"
                again.headers["If-Range"] = validator.headerValue
                let resumption: DownloadState.Resumption
                var resumed: (body: StreamedBody, response: HTTPURLResponse)?
                do {
                    let answer = try await stream(again, idleTimeout: idleTimeout)
                    resumed = answer
                    resumption = state.resumption(for: answer.response)
                } catch let error as CourierError where error.statusCode == 416 {
                    // Thrown as a status the request does not accept: the resource is shorter now.
                    resumption = .startOver
                }
                switch (resumption, resumed) {
                case (.append, let resumed?):
                    body = resumed.body
                case (.restart, let resumed?):
                    (body, head) = resumed
                    try file.truncate()
                    state.begin(with: head)
                    progress?(state.progress)
                case (.startOver, _):
                    resumed?.body.cancel()
                    (body, head) = try await stream(request, idleTimeout: idleTimeout)
                    guard head.statusCode == 200 else {
                        body.cancel()
                        throw state.unexpected(head, resumed: false)
                    }
                    try file.truncate()
                    state.begin(with: head)
                    progress?(state.progress)
                case (_, let resumed):
                    resumed?.body.cancel()
                    throw state.unexpected(resumed?.response ?? head, resumed: true)
                }
            } catch {
                throw state.failure(error, response: head)
            }
        }
        try file.moveIntoPlace(at: destination)
        return head
    }
}

/// The file system's error while writing the body: thrown as it is, never resumed.
private struct FileFailure: Error {
    let error: any Error
}
