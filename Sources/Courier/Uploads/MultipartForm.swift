public import Foundation

/// A `multipart/form-data` body (RFC 7578): text fields, bytes, files and streams, each a ``Part`` with its
/// own headers, sent as a ``RequestBody/multipart(_:)`` body.
///
/// ```swift
/// let form = MultipartForm([
///     .text("title", "Quarterly report"),
///     .data("metadata", metadataJSON, contentType: "application/json"),
///     .file("report", at: reportURL, contentType: "application/pdf"),
///     .stream("log", filename: "build.log", contentType: "text/plain") { buildLog.chunks() },
/// ])
/// let receipt: Receipt = try await client.send(.post("/reports", body: .multipart(form)))
/// ```
///
/// - File parts are read from disk, and stream parts from their sequences, in chunks as the body is sent,
///   never held whole in memory. Each file's size is taken when the request is built; the body's length is
///   known unless a stream part was given none (then it is sent chunked).
/// - Every send of the body (including a retry or a `307`/`308`) reads the files again from the start and
///   makes each stream part's sequence again. A form with a one-shot stream part
///   (``Part/stream(_:once:length:filename:contentType:)``) can be sent only once: a layer that would send it
///   again throws ``CourierError/Code/bodyNotReplayable`` instead.
/// - Names and filenames are written as UTF-8, the way browsers send them and servers read them; the
///   three characters that would break the header, `"`, CR and LF, are percent-encoded (`%22`, `%0D`,
///   `%0A`), as RFC 7578 §4.2 allows. No `filename*` parameter is sent (§4.2 forbids it).
/// - The boundary is random unless you give one. Courier does not scan the parts for it: a random
///   boundary of 32 hexadecimal digits does not occur in real data.
public struct MultipartForm: Sendable {
    /// The boundary between parts, without the leading `--`: 1 to 70 characters from RFC 2046's set.
    public let boundary: String
    /// The parts, in the order they are sent.
    public var parts: [Part]

    /// A form with `parts`, separated by `boundary` or by a random one.
    ///
    /// - Parameters:
    ///   - parts: The parts, in the order they are sent.
    ///   - boundary: The boundary, or `nil` for a random one. It must be 1 to 70 characters
    ///     from RFC 2046's set (letters, digits and `'()+_,-./:=? `, not ending in a space); the request
    ///     fails with ``CourierError/Code/encodingFailed`` when it is not.
    public init(_ parts: [Part] = [], boundary: String? = nil) {
        self.parts = parts
        self.boundary = boundary ?? Self.randomBoundary()
    }

    /// Adds `part` after the others.
    public mutating func append(_ part: Part) {
        parts.append(part)
    }

    /// The body's `Content-Type`: `multipart/form-data; boundary=…`, the boundary quoted when it holds a
    /// character a bare parameter value cannot (a space, `(`, `)`, `,`, `/`, `:`, `=`, `?`; RFC 2046 §5.1.1).
    public var contentType: String {
        RequestValidation.isToken(boundary)
            ? "multipart/form-data; boundary=\(boundary)" : "multipart/form-data; boundary=\"\(boundary)\""
    }

    /// `courier-` and 32 random hexadecimal digits.
    static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = (0..<4).map { _ in
            let value = generator.next() as UInt32
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 8 - hex.count) + hex
        }
        return "courier-" + digits.joined()
    }
}

extension MultipartForm {
    /// One part of a form: a field's name, its content, and the headers sent before it.
    ///
    /// ```swift
    /// let avatar = MultipartForm.Part.file("avatar", at: photoURL, filename: "été.jpg", contentType: "image/jpeg")
    ///     .header("Content-Language", "fr")
    /// ```
    public struct Part: Sendable {
        enum Content: Sendable {
            case data(Data)
            case file(URL)
            case stream(PartChunks)
        }

        /// The field's name, from the part's `Content-Disposition`.
        public var name: String
        /// The filename sent in the part's `Content-Disposition`, or `nil` for none (a plain field).
        public var filename: String?
        /// The part's `Content-Type`, or `nil` to send none (a receiver then reads `text/plain`).
        public var contentType: String?
        /// Further headers sent with the part, after `Content-Disposition` and `Content-Type`.
        public var headers: HTTPHeaders
        let content: Content

        init(name: String, filename: String?, contentType: String?, content: Content) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.headers = HTTPHeaders()
            self.content = content
        }

        /// A text field, sent as UTF-8 with no `Content-Type` (which a receiver reads as `text/plain`).
        public static func text(_ name: String, _ value: String) -> Part {
            Part(name: name, filename: nil, contentType: nil, content: .data(Data(value.utf8)))
        }

        /// Bytes in memory, as a field or, with a `filename`, as an uploaded file.
        ///
        /// - Parameters:
        ///   - name: The field's name.
        ///   - data: The bytes.
        ///   - filename: The filename to send, or `nil` for none.
        ///   - contentType: The part's `Content-Type`, or `nil` for none.
        public static func data(
            _ name: String,
            _ data: Data,
            filename: String? = nil,
            contentType: String? = "application/octet-stream"
        ) -> Part {
            Part(name: name, filename: filename, contentType: contentType, content: .data(data))
        }

        /// A file on disk, read in chunks as the body is sent.
        ///
        /// The file must exist and be a regular file when the request is built, or lead to one through symbolic
        /// links (a Kubernetes Secret mount), or the request fails with ``CourierError/Code/encodingFailed`` and
        /// nothing is sent: a directory, a FIFO, a device, a dangling link are refused. Its size then is the
        /// part's length: a file that shrinks before it is sent fails the send, and bytes appended later are not
        /// sent; once another file has the path (renamed over it), a send fails instead of sending a part of it.
        /// The filename sent by default is the URL's, not the link target's.
        ///
        /// - Parameters:
        ///   - name: The field's name.
        ///   - url: The file's URL.
        ///   - filename: The filename to send; the URL's last path component when `nil`.
        ///   - contentType: The part's `Content-Type`.
        public static func file(
            _ name: String,
            at url: URL,
            filename: String? = nil,
            contentType: String = "application/octet-stream"
        ) -> Part {
            Part(name: name, filename: filename ?? url.lastPathComponent, contentType: contentType, content: .file(url))
        }

        /// Bytes from an asynchronous sequence of chunks, which `makeChunks` makes afresh for every send: a
        /// part too large to hold in memory, or produced as it is sent.
        ///
        /// ```swift
        /// let form = MultipartForm([
        ///     .text("table", "orders"),
        ///     .stream("rows", filename: "orders.csv", contentType: "text/csv") {
        ///         database.orders().map { Data($0.csvLine.utf8) }     // a new sequence each time it is called
        ///     },
        /// ])
        /// ```
        ///
        /// The part is replayable as ``RequestBody/stream(length:contentType:_:)`` is: every send of the form (a
        /// retry, the restart after a token refresh, a `307`/`308`, a hedged attempt) calls `makeChunks` again
        /// when it reaches the part, so it must return a sequence that starts from the beginning each time. For a
        /// sequence that can be read only once, use ``stream(_:once:length:filename:contentType:)``.
        ///
        /// - With a `length`, a sequence that ends early or runs long fails the send. Without one, the form's
        ///   length is unknown and it is sent chunked (AsyncHTTPClientTransport sends a `Content-Length` for a
        ///   form whose every stream part has a length).
        /// - Empty chunks are skipped. Cancelling the send cancels the task that iterates the sequence.
        ///
        /// - Parameters:
        ///   - name: The field's name.
        ///   - length: The part's length in bytes, if known.
        ///   - filename: The filename to send, or `nil` for none.
        ///   - contentType: The part's `Content-Type`, or `nil` for none.
        ///   - makeChunks: Makes the sequence of chunks for one send.
        public static func stream<Chunks: AsyncSequence & SendableMetatype>(
            _ name: String,
            length: Int64? = nil,
            filename: String? = nil,
            contentType: String? = "application/octet-stream",
            _ makeChunks: @escaping @Sendable () -> Chunks
        ) -> Part where Chunks.Element == Data {
            precondition((length ?? 0) >= 0, "a part's length must not be negative")
            let chunks = PartChunks(name: name, length: length, isOneShot: false) { ChunkIterator(makeChunks()) }
            return Part(name: name, filename: filename, contentType: contentType, content: .stream(chunks))
        }

        /// Bytes from `chunks`, a sequence that can be read only once: a request body being forwarded, a
        /// pipe, a socket.
        ///
        /// ```swift
        /// // Chunks that arrive from elsewhere (a socket, another request's body), passed on without buffering.
        /// let (capture, continuation) = AsyncStream<Data>.makeStream()
        /// let form = MultipartForm([.stream("capture", once: capture, filename: "capture.pcap")])
        /// ```
        ///
        /// The form can be sent **once**. A layer that would send it again (``Middleware/retry(_:clock:)``, the
        /// authenticating middleware's restart after a refresh, a `307`/`308`) throws
        /// ``CourierError/Code/bodyNotReplayable`` instead of sending the part empty or in part, and
        /// ``Middleware/hedging(after:maxExtraAttempts:clock:)`` does not hedge it. Any second reading of the
        /// body (a second send of the same request, a middleware that read the body before the transport)
        /// fails before its first byte is sent.
        ///
        /// - Parameters:
        ///   - name: The field's name.
        ///   - chunks: The chunks; empty ones are skipped.
        ///   - length: The part's length in bytes, if known; a sequence that ends early or runs long fails the
        ///     send. Without one the form is sent chunked.
        ///   - filename: The filename to send, or `nil` for none.
        ///   - contentType: The part's `Content-Type`, or `nil` for none.
        public static func stream<Chunks: AsyncSequence & Sendable & SendableMetatype>(
            _ name: String,
            once chunks: Chunks,
            length: Int64? = nil,
            filename: String? = nil,
            contentType: String? = "application/octet-stream"
        ) -> Part where Chunks.Element == Data {
            precondition((length ?? 0) >= 0, "a part's length must not be negative")
            let chunks = PartChunks(name: name, length: length, isOneShot: true) { ChunkIterator(chunks) }
            return Part(name: name, filename: filename, contentType: contentType, content: .stream(chunks))
        }

        /// Returns the part with one more header. `Content-Disposition` and `Content-Type` are not accepted
        /// here (they come from the part's name, filename and content type): the request fails with
        /// ``CourierError/Code/encodingFailed``.
        public func header(_ name: String, _ value: String) -> Part {
            var copy = self
            copy.headers.add(name: name, value: value)
            return copy
        }
    }
}
