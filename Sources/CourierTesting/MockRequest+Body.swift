import Courier
public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension MockRequest {
    /// The body as a transport would send it: `httpBody`; a body Courier streams (`RequestBody.file`,
    /// `.stream`, `.multipart`) read from its source, from the first byte; any other `httpBodyStream` read
    /// to its end (which it can be only once).
    ///
    /// ```swift
    /// let api = MockTransport { request in
    ///     let bytes = try await request.readBody()
    ///     return .json(["received": bytes.count])
    /// }
    /// ```
    ///
    /// - Throws: The error the body's source throws: a file that changed size, a stream that failed.
    public func readBody() async throws -> Data {
        if let body = urlRequest.httpBody { return body }
        guard let stream = urlRequest.httpBodyStream else { return Data() }
        if let upload = stream as? UploadBodyStream {
            return try await upload.source.collect()
        }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw stream.streamError ?? MockTransportError(message: "the body stream failed") }
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
        }
    }
}
