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
    /// memory; resumes with `Range` after a lost connection when the server allows it, and, when `resumable`, in a
    /// later call — after the process restarted — from the partial file an interrupted call kept.
    ///
    /// ```swift
    /// let response = try await client.download(
    ///     .get("/exports/2026.tar.gz"),
    ///     to: URL(filePath: "/var/data/2026.tar.gz"),
    ///     resumable: true,
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
    ///   caller's (a part where the whole was asked for). A `destination` that is a directory, a symbolic link
    ///   (neither followed nor replaced: name its target), a FIFO or a device, or whose directory cannot take a
    ///   new file, throws ``CourierError/Code/invalidRequest`` before anything is sent.
    /// - **Resuming**: when the body of a `200` to a `GET` stops early (the connection is lost or cut, no chunk
    ///   arrives within the idle timeout, the transport gives up on it), and the response carried a strong `ETag`,
    ///   or a `Last-Modified` at least a second before its `Date`, the request is sent again with
    ///   `Range: bytes=N-` and `If-Range`, up to `resumeAttempts` times. A `206` is appended only when it is the
    ///   rest of the same version: the same strong validator, a `Content-Range` that starts at byte `N`, and the
    ///   same complete length. Any other `206` (a proxy that ignores `If-Range` sends the new version's), or a
    ///   `416`, starts the file over with one more request, without a range; a `200` starts it over with its own
    ///   body; a `204` or any other status throws. Without a strong validator, or for a body the transport decoded
    ///   (`Content-Encoding`), the error is thrown: bytes of two versions are never combined. Another method than
    ///   `GET` is never resumed, and its error is thrown: a range request is defined for `GET` alone
    ///   (RFC 9110 §14.2), and sending a `POST` again (text to speech, an export) could act on it twice.
    /// - **Across calls and restarts** (`resumable: true`, for a `GET` of the whole resource; another method, or a
    ///   request with a `Range` or `If-Range` of its own, throws ``CourierError/Code/invalidRequest`` before anything
    ///   is sent): the body is written to `.NAME.courier-partial`
    ///   beside `destination` (`NAME`), and the version's validator, complete length and a digest of the request's
    ///   method and URL (not the URL, which may carry a key) to `.NAME.courier-partial.json`, both readable and
    ///   writable by the process's user alone (`0600`). When the download fails, is cancelled or the process dies, both
    ///   stay (a version without a strong validator cannot be resumed, so its partial file is removed), and the next
    ///   resumable call to the same destination with the same method and URL asks for the rest with `Range: bytes=N-`
    ///   and `If-Range`, `N` being the partial file's length, and appends the answer under the rules above; a `200`
    ///   (the resource changed) or a `206` that is not the rest starts again from 0. A record that is unreadable,
    ///   malformed or for another request is ignored: the download starts from 0. A link, a directory, a FIFO or
    ///   another user's file at either name is refused (``CourierError/Code/invalidRequest``) and left alone, and so is
    ///   a second download to the same destination while one is under way (the partial file is locked). A partial file
    ///   survives the process, not necessarily the machine: it is not flushed to disk as it is written.
    /// - **Length**: when the server announced a `Content-Length` (or a `Content-Range`'s complete length), a
    ///   body that ends short of it is an error (or resumed), never a truncated file, and one that runs past it
    ///   is an error.
    /// - **Progress** is reported from a task of its own, so a slow handler never slows the transfer: the bytes
    ///   are read and written at the network's speed, and reports the handler had no time for are dropped, the
    ///   latest wins. The first report comes when the response head arrives (`bytesWritten` is 0, or where a
    ///   resumed partial file stands), then at most one every `progressInterval`, and the last one — the whole
    ///   file — as soon as the body is complete. A download that starts over reports from 0 again. The call
    ///   returns after the handler has returned from its last report: none comes after it.
    ///
    /// - Parameters:
    ///   - request: The request for the resource.
    ///   - destination: A file URL.
    ///   - resumable: Whether a download that does not complete keeps its partial file, for a later call to
    ///     resume (see above); `false` by default.
    ///   - resumeAttempts: How many times to resume after the body stops early; 3 by default, 0 for never. A
    ///     resumption sends at most two requests (the range request, and the request sent again from the start).
    ///   - idleTimeout: The longest the body may go without a chunk before it counts as stopped.
    ///   - progressInterval: The shortest time between two progress reports (100 ms by default: often enough for
    ///     a progress bar or a log line, whatever the size or speed of the download); `.zero` reports as often as
    ///     the handler keeps up.
    ///   - clock: The clock that measures the idle timeout and the progress interval.
    ///   - progress: Called with how far the download has come.
    /// - Returns: The response head of the version in the file: the first response's, or that of the response
    ///   that started the file over; for a download resumed from a partial file, the `206` that completed it.
    /// - Throws: ``CourierError/Code/invalidRequest`` for a destination (or partial file) that cannot be written,
    ///   what ``stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)`` throws, a body's
    ///   ``CourierError`` (an idle timeout's ``CourierError/Code/timedOut``, say), ``CourierError/Code/transport``
    ///   for a body that stopped early or short of its length and cannot be resumed (the transport's own error
    ///   underneath), ``CourierError/Code/unacceptableStatus`` for a resumed request answered with no part of the
    ///   resource, or the file system's error.
    public nonisolated func download<C: Clock<Duration>>(
        _ request: Request<Data>,
        to destination: URL,
        resumable: Bool = false,
        resumeAttempts: Int = 3,
        idleTimeout: Duration? = nil,
        progressInterval: Duration = .milliseconds(100),
        clock: C = ContinuousClock(),
        progress: (@Sendable (DownloadProgress) async -> Void)? = nil
    ) async throws -> HTTPURLResponse {
        precondition(destination.isFileURL, "a download's destination must be a file URL")
        precondition(resumeAttempts >= 0, "resumeAttempts must not be negative")
        precondition(progressInterval >= .zero, "progressInterval must not be negative")
        try DownloadFile.checkDestination(destination)
        var identity: String?
        if resumable {
            guard request.method == .get else {
                throw CourierError(
                    .invalidRequest,
                    message: "a resumable download must be a GET: a range request is defined for GET alone, and "
                        + "resuming a \(request.method.rawValue) would send it again"
                )
            }
            // A resumable download is of the whole resource: a partial file kept for it would be taken up, and the
            // caller's range replaced by the rest of the whole.
            for header in ["Range", "If-Range"] where request.headers[header] != nil {
                throw CourierError(
                    .invalidRequest,
                    message: "a resumable download is of the whole resource: it cannot carry a \(header) of its own"
                )
            }
            let snapshot = self.snapshot
            let urlRequest = try request.urlRequest(
                baseURL: snapshot.configuration.baseURL,
                encoder: snapshot.configuration.encoder
            )
            if let url = urlRequest.url {
                identity = DownloadResumeRecord.digest(method: request.method.rawValue, url: url)
            }
        }
        let file =
            identity == nil ? try DownloadFile(beside: destination) : try DownloadFile(resumingBeside: destination)
        defer { file.discard() }
        var transfer = DownloadTransfer(
            request: request,
            file: file,
            identity: identity,
            idleTimeout: idleTimeout,
            clock: clock,
            reports: progress == nil ? nil : DownloadProgressMailbox()
        )
        guard let progress, let reports = transfer.reports else {
            return try await transfer.run(on: self, resumeAttempts: resumeAttempts, to: destination)
        }
        return try await withThrowingTaskGroup(of: Void.self, returning: HTTPURLResponse.self) { group in
            group.addTask { await reports.deliver(every: progressInterval, clock: clock, to: progress) }
            // The group waits for the last report's delivery before it returns.
            defer { reports.finish() }
            return try await transfer.run(on: self, resumeAttempts: resumeAttempts, to: destination)
        }
    }
}

/// One download's requests, file and bookkeeping, from the first request to the file moved into place.
private struct DownloadTransfer<C: Clock<Duration>> {
    let request: Request<Data>
    let file: DownloadFile
    /// The request's digest for a resumable download's record; `nil` for a download that is not resumable.
    let identity: String?
    let idleTimeout: Duration?
    let clock: C
    let reports: DownloadProgressMailbox?
    var state = DownloadState()

    mutating func run(on client: Client, resumeAttempts: Int, to destination: URL) async throws -> HTTPURLResponse {
        var body: StreamedBody
        var head: HTTPURLResponse
        if try restore() {
            // The rest of a version an earlier call kept, or the version the server has now.
            (body, head, _) = try await resume(on: client)
        } else {
            (body, head) = try await client.stream(request, idleTimeout: idleTimeout, clock: clock)
            if head.statusCode == 204 || head.statusCode == 205
                || (head.statusCode == 206 && request.headers["Range"] == nil)
            {
                // No content, by definition: not an empty file to put in the destination's place. A part where no
                // range was asked for is not the file either (a server or cache that sends one breaks RFC 9110
                // §15.3.7).
                body.cancel()
                throw state.unexpected(head, resumed: false)
            }
            try begin(with: head)
        }
        // Only a GET resumes (see the doc comment): another method's error is thrown as it is.
        var resumesLeft = request.method == .get ? resumeAttempts : 0
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
                    reports?.post(state.progress)
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
                guard state.validator != nil else { throw error }
                resumesLeft -= 1
                let next = try await resume(on: client)
                body = next.body
                if next.restarted { head = next.response }
            } catch {
                throw state.failure(error, response: head)
            }
        }
        try file.moveIntoPlace(at: destination)
        return head
    }

    /// Takes up the partial file a resumable download kept, when its record is for this request; otherwise
    /// empties it. Returns whether there is a part to resume.
    private mutating func restore() throws -> Bool {
        guard let identity else { return false }
        let length = try file.seekToEnd()
        guard length > 0, let record = file.record(for: identity) else {
            try file.truncate()
            return false
        }
        // A file as long as the version (a call that ended before the rename) asks for its last byte again, so
        // that the answer is a 206 to check, and a head to return.
        let kept = record.completeLength.map { min(length, $0 - 1) } ?? length
        guard kept > 0 else {
            try file.truncate()
            return false
        }
        if kept < length { try file.truncate(to: kept) }
        state.restore(bytesWritten: kept, from: record)
        file.keep()
        return true
    }

    /// Starts the file over with the body of `head`: emptied, then the version's record written (or removed, for a
    /// version that cannot be resumed), in that order, so a partial file never holds bytes of another version than
    /// its record names.
    private mutating func begin(with head: HTTPURLResponse) throws {
        try file.truncate()
        state.begin(with: head)
        if let identity {
            try file.begin(
                state.validator.map {
                    DownloadResumeRecord(request: identity, validator: $0, completeLength: state.expectedBytes)
                }
            )
        }
        reports?.post(state.progress)
    }

    /// Sends the request again for the rest of the version in the file, with `Range` and `If-Range`; returns the
    /// body to append, or that of a version that started the file over (`restarted`).
    private mutating func resume(
        on client: Client
    ) async throws -> (body: StreamedBody, response: HTTPURLResponse, restarted: Bool) {
        guard let validator = state.validator else { preconditionFailure("a download resumed without a validator") }
        var again = request
        again.headers["Range"] = "bytes=\(state.bytesWritten)-"
        again.headers["If-Range"] = validator.headerValue
        var answer: (body: StreamedBody, response: HTTPURLResponse)?
        do {
            answer = try await client.stream(again, idleTimeout: idleTimeout, clock: clock)
        } catch let error as CourierError where error.statusCode == 416 {
            // Thrown as a status the request does not accept: the resource is shorter now.
            answer = nil
        }
        if let answer {
            switch state.resumption(for: answer.response) {
            case .append:
                reports?.post(state.progress)
                return (answer.body, answer.response, false)
            case .restart:
                try begin(with: answer.response)
                return (answer.body, answer.response, true)
            case .startOver:
                answer.body.cancel()
            case .fail:
                answer.body.cancel()
                throw state.unexpected(answer.response, resumed: true)
            }
        }
        let (body, head) = try await client.stream(request, idleTimeout: idleTimeout, clock: clock)
        guard head.statusCode == 200 else {
            body.cancel()
            throw state.unexpected(head, resumed: false)
        }
        try begin(with: head)
        return (body, head, true)
    }
}

/// The file system's error while writing the body: thrown as it is, never resumed.
private struct FileFailure: Error {
    let error: any Error
}
