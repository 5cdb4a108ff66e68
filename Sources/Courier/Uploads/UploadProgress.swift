/// How much of a request body the transport has read so far: what an upload progress bar shows.
///
/// Attach a handler to any body with ``RequestBody/onUploadProgress(_:)``:
///
/// ```swift
/// let body = RequestBody.file(videoURL, contentType: "video/mp4").onUploadProgress { progress in
///     if let fraction = progress.fractionCompleted { print("\(Int(fraction * 100)) %") }
/// }
/// try await client.send(.put("/videos/42", body: body))
/// ```
///
/// The counts are of bytes the transport has taken from the body to send, which runs ahead of what the
/// server has received by no more than the transport's send buffer. When the body is sent again (a retry,
/// the restart after a token refresh, a `307`/`308` redirect), the count starts again from zero.
public struct UploadProgress: Sendable, Hashable {
    /// The bytes of the body read by the transport so far, in this send.
    public var bytesSent: Int64
    /// The length of the whole body, or `nil` when it is not known in advance (a ``RequestBody/stream(length:contentType:_:)``
    /// body made without a length).
    public var totalBytes: Int64?

    /// Creates a progress report.
    public init(bytesSent: Int64, totalBytes: Int64?) {
        self.bytesSent = bytesSent
        self.totalBytes = totalBytes
    }

    /// `bytesSent / totalBytes`, from 0 to 1; `nil` when the length is not known. An empty body is complete (1).
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, Double(bytesSent) / Double(totalBytes))
    }
}
