public import Foundation

extension RequestBody {
    /// A file's bytes, read from disk in chunks as they are sent, never held whole in memory.
    ///
    /// ```swift
    /// try await client.send(.put("/backups/today.tar", body: .file(archiveURL, contentType: "application/x-tar")))
    /// ```
    ///
    /// The body is replayable: a retry, the restart after a token refresh, a `307`/`308` redirect or a hedged
    /// attempt reads the file again from the start. The file must exist and be a regular file when the
    /// request is built, or lead to one through symbolic links (a Kubernetes Secret mount), or the request fails
    /// with ``CourierError/Code/encodingFailed`` and nothing is sent: a directory, a FIFO, a device, a dangling
    /// link are refused. Its size then is the body's length (a file that shrinks before it is sent fails the
    /// send; bytes appended later are not sent), and every send reads that file: once another file has the path
    /// (renamed over it, as editors save and Secret mounts rotate), a send fails instead of sending a part of it.
    ///
    /// - Parameters:
    ///   - url: A file URL.
    ///   - contentType: The `Content-Type` when the request sets none, or `nil` for none.
    public static func file(_ url: URL, contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(storage: .file(url, contentType: contentType))
    }

    /// A body streamed from an asynchronous sequence of chunks, which `makeChunks` makes afresh for every send.
    ///
    /// ```swift
    /// let body = RequestBody.stream(length: export.size, contentType: "text/csv") {
    ///     export.rows().map { Data($0.csvLine.utf8) }     // a new sequence each time it is called
    /// }
    /// try await client.send(.post("/imports", body: body))
    /// ```
    ///
    /// The body is replayable because it is made, not stored: a retry, the restart after a token refresh, a
    /// `307`/`308` redirect or a hedged attempt calls `makeChunks` again (concurrently, for hedging), so it must
    /// return a sequence that starts from the beginning each time.
    ///
    /// - With a `length`, AsyncHTTPClientTransport sends it as the `Content-Length`, and a sequence that ends
    ///   early or runs long fails the send. Without one, the body is sent chunked.
    /// - URLSessionTransport reads the body on URLSession's own thread, which waits for each chunk: a
    ///   sequence that is slow to produce holds up the other transfers meanwhile, on Linux those of every
    ///   session in the process (FoundationNetworking gives them one work queue), until it produces or the send
    ///   ends (its timeout, its cancellation: the upload is then aborted, the body never ended early, and the
    ///   queue let go). Courier's own calls into that queue wait off Swift's cooperative pool, so the process's
    ///   other tasks run on meanwhile. Use AsyncHTTPClientTransport for a source that may stall.
    /// - Cancelling the send cancels the task that iterates the sequence.
    ///
    /// - Parameters:
    ///   - length: The body's length in bytes, if known.
    ///   - contentType: The `Content-Type` when the request sets none, or `nil` for none.
    ///   - makeChunks: Makes the sequence of chunks for one send; empty chunks are skipped.
    public static func stream<Chunks: AsyncSequence & SendableMetatype>(
        length: Int64? = nil,
        contentType: String? = "application/octet-stream",
        _ makeChunks: @escaping @Sendable () -> Chunks
    ) -> RequestBody where Chunks.Element == Data {
        precondition((length ?? 0) >= 0, "a body's length must not be negative")
        let source = UploadSource(length: length) { ChunkIterator(makeChunks()) }
        return RequestBody(storage: .stream(source, contentType: contentType))
    }

    /// A `multipart/form-data` body; its `Content-Type`, with the boundary, is set unless the request sets one.
    ///
    /// ```swift
    /// let form = MultipartForm([.text("caption", "Sunset"), .file("photo", at: photoURL, contentType: "image/jpeg")])
    /// try await client.send(.post("/photos", body: .multipart(form)))
    /// ```
    ///
    /// File parts are read from disk, and stream parts from their sequences, as the body is sent. The body is
    /// replayable like ``file(_:contentType:)`` and ``stream(length:contentType:_:)``, unless a part is a one-shot
    /// stream (``MultipartForm/Part/stream(_:once:length:filename:contentType:)``): then a layer that would send
    /// it again throws ``CourierError/Code/bodyNotReplayable``. The form's boundary, part headers and files are
    /// checked when the request is built: a problem fails it with ``CourierError/Code/encodingFailed`` and
    /// nothing is sent.
    public static func multipart(_ form: MultipartForm) -> RequestBody {
        RequestBody(storage: .multipart(form))
    }

    /// Returns the body with `handler` told how much of it the transport has read, after every chunk.
    ///
    /// ```swift
    /// let body = RequestBody.file(movieURL).onUploadProgress { progress in
    ///     print("\(progress.bytesSent) of \(progress.totalBytes ?? -1) bytes")
    /// }
    /// ```
    ///
    /// `handler` runs on the thread that reads the body (a transport's own thread, for URLSession), which waits for it: keep it
    /// quick (hand the numbers to your UI or log). Every send reports from zero. A body of bytes (JSON, a
    /// form, `Data`) with a handler is sent as a stream, so that its reads can be counted.
    public func onUploadProgress(_ handler: @escaping @Sendable (UploadProgress) -> Void) -> RequestBody {
        var copy = self
        copy.progress = handler
        return copy
    }
}
