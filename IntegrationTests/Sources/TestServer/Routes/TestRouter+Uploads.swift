import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// What `/uploads/digest` and `/uploads/flaky/:key` read of a request body.
public struct UploadDigest: Codable, Sendable, Equatable {
    /// The attempt this request was under its key, counting from 1 (1 for `/uploads/digest`).
    public var attempt: Int
    /// The body's length in bytes.
    public var length: Int
    /// The body's 64-bit FNV-1a hash, in hexadecimal.
    public var fnv1a: String
    /// The request's `Content-Length`, if it sent one.
    public var contentLength: String?
    /// The request's `Transfer-Encoding`, if it sent one.
    public var transferEncoding: String?
    /// The request's `Content-Type`, if it sent one.
    public var contentType: String?

    /// The 64-bit FNV-1a hash of `bytes` continued from `hash`, the offset basis by default.
    public static func fnv1a<Bytes: Sequence>(_ bytes: Bytes, continuing hash: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64
    where Bytes.Element == UInt8 {
        var hash = hash
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return hash
    }
}

/// Attempts per key of `/uploads/flaky/:key`.
private actor UploadAttempts {
    private var counts: [String: Int] = [:]

    func next(_ key: String) -> Int {
        counts[key, default: 0] += 1
        return counts[key]!
    }
}

extension TestRouter {
    /// The largest body `/uploads/flaky/:key` echoes.
    static let maximumUploadEcho = 8 * 1024 * 1024

    /// `/uploads/digest` reads the body as it streams in, keeping none of it, and answers its length and
    /// hash; `/uploads/flaky/:key` reads the whole body and answers the first attempt under a key with 503,
    /// every later one with 200 and the body it received, byte for byte (with the digest in the
    /// `Upload-Digest` header, as JSON); `/uploads/multipart` reads a `multipart/form-data` body as it streams
    /// in, keeping none of it, and answers a ``MultipartDigest`` (each part's name, filename, type, length and
    /// hash), with `?failFirst=KEY` as a 503 to the first attempt under the key (400 for a malformed form).
    static func addUploadRoutes(to router: Router<BasicRequestContext>) {
        let attempts = UploadAttempts()
        for method in [HTTPRequest.Method.post, .put] {
            router.on("uploads/digest", method: method) { request, _ in
                var length = 0
                var hash = UploadDigest.fnv1a([UInt8]())
                for try await buffer in request.body {
                    length += buffer.readableBytes
                    hash = buffer.withUnsafeReadableBytes { UploadDigest.fnv1a($0, continuing: hash) }
                }
                return try Response.json(Self.digest(request, attempt: 1, length: length, hash: hash))
            }

            router.on("uploads/multipart", method: method) { request, _ in
                guard let boundary = request.headers[.contentType].flatMap(MultipartDigester.boundary(of:)) else {
                    return Response.badRequest("the body must be multipart/form-data with a boundary")
                }
                var digester = MultipartDigester(boundary: boundary)
                var length = 0
                let parts: [MultipartDigest.Part]
                do {
                    for try await buffer in request.body {
                        length += buffer.readableBytes
                        try buffer.withUnsafeReadableBytes { try digester.feed($0) }
                    }
                    parts = try digester.finish()
                } catch let failure as MultipartDigester.Failure {
                    return Response.badRequest(failure.description)
                }
                let key = QueryItems(request.uri.query)["failFirst"]
                let attempt = if let key { await attempts.next(key) } else { 1 }
                let digest = MultipartDigest(
                    attempt: attempt,
                    parts: parts,
                    contentLength: request.headers[.contentLength],
                    transferEncoding: request.headers[.transferEncoding],
                    length: length
                )
                return try Response.json(digest, status: key != nil && attempt == 1 ? .serviceUnavailable : .ok)
            }

            router.on("uploads/flaky/:key", method: method) { request, context in
                let key = try context.parameters.require("key")
                let body = try await request.body.collect(upTo: maximumUploadEcho)
                let attempt = await attempts.next(key)
                let hash = body.withUnsafeReadableBytes { UploadDigest.fnv1a($0) }
                let digest = Self.digest(request, attempt: attempt, length: body.readableBytes, hash: hash)
                guard attempt > 1 else {
                    return try Response.json(digest, status: .serviceUnavailable)
                }
                var headers = HTTPFields()
                headers[.contentType] = "application/octet-stream"
                headers[HTTPField.Name("Upload-Digest")!] = String(
                    decoding: try JSONEncoder().encode(digest),
                    as: UTF8.self
                )
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
            }
        }
    }

    private static func digest(_ request: Request, attempt: Int, length: Int, hash: UInt64) -> UploadDigest {
        UploadDigest(
            attempt: attempt,
            length: length,
            fnv1a: String(hash, radix: 16),
            contentLength: request.headers[.contentLength],
            transferEncoding: request.headers[.transferEncoding],
            contentType: request.headers[.contentType]
        )
    }
}
