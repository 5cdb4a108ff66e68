import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects a response body chunk by chunk and refuses to hold more than a maximum number of bytes.
///
/// The transports feed every chunk they receive into one of these; once the body is larger than the
/// limit, the accumulator drops what it holds and reports it, so a huge or endless body is never
/// buffered.
struct ResponseBodyAccumulator: Sendable {
    /// The most bytes a body may have.
    let limit: Int
    /// What was collected so far (empty once the limit was exceeded).
    private(set) var data = Data()
    /// Whether the body turned out larger than ``limit``.
    private(set) var isOverLimit = false
    /// How many bytes were received in all, including those dropped after the limit was exceeded.
    private(set) var receivedCount = 0

    init(limit: Int) {
        precondition(limit >= 0, "the maximum response size must not be negative")
        self.limit = limit
    }

    /// Whether a body announced with `Content-Length: length` is already known to be too large.
    ///
    /// A response to `HEAD` and a `304 Not Modified` announce the length of a body they do not carry, so
    /// they are never refused on their `Content-Length`.
    static func announcedLengthExceeds(
        _ limit: Int,
        expectedContentLength: Int64,
        method: String?,
        status: Int
    ) -> Bool {
        guard expectedContentLength > Int64(limit) else { return false }
        if status == 304 || status == 204 || (100..<200).contains(status) { return false }
        if let method, method.caseInsensitiveEquals("HEAD") { return false }
        return true
    }

    /// Prepares room for a body whose length is announced, up to the limit.
    mutating func reserve(expectedContentLength: Int64) {
        guard expectedContentLength > 0, data.isEmpty else { return }
        data.reserveCapacity(Int(min(expectedContentLength, Int64(limit))))
    }

    /// Adds a chunk.
    ///
    /// - Returns: `false` when the body is now larger than the limit; what was held is dropped then, and
    ///   later chunks are ignored.
    @discardableResult
    mutating func append(_ chunk: some Collection<UInt8>) -> Bool {
        guard !isOverLimit else { return false }
        let count = chunk.count
        receivedCount += count
        guard data.count + count <= limit else {
            isOverLimit = true
            data = Data()
            return false
        }
        data.append(contentsOf: chunk)
        return true
    }
}

extension CourierError {
    /// The error for a response body larger than `limit` bytes.
    static func bodyTooLarge(
        limit: Int,
        announcedLength: Int64? = nil,
        request: URLRequest,
        response: HTTPURLResponse?,
        transport: String
    ) -> CourierError {
        var message = "the response body is larger than the maximum of \(limit) bytes"
        if let announcedLength {
            message += " (Content-Length: \(announcedLength))"
        }
        message += "; raise it with \(transport)(maximumResponseSize:) if such responses are expected"
        return CourierError(.bodyTooLarge, message: message, request: request, response: response)
    }
}
