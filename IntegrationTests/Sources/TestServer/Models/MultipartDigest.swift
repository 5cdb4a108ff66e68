/// What `/uploads/multipart` read of a `multipart/form-data` body, part by part.
public struct MultipartDigest: Codable, Sendable, Equatable {
    /// One part: its headers as read, and its content's length and hash.
    public struct Part: Codable, Sendable, Equatable {
        /// The `name` of its `Content-Disposition`.
        public var name: String
        /// The `filename` of its `Content-Disposition`, if any.
        public var filename: String?
        /// Its `Content-Type`, if any.
        public var contentType: String?
        /// The content's length in bytes.
        public var length: Int
        /// The content's 64-bit FNV-1a hash, in hexadecimal (see ``UploadDigest/fnv1a(_:continuing:)``).
        public var fnv1a: String

        /// A part as the server reports it.
        public init(name: String, filename: String? = nil, contentType: String?, length: Int, fnv1a: String) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.length = length
            self.fnv1a = fnv1a
        }
    }

    /// The attempt this request was under its `?failFirst=` key, counting from 1 (1 without a key).
    public var attempt: Int
    /// The parts, in the order they arrived.
    public var parts: [Part]
    /// The request's `Content-Length`, if it sent one.
    public var contentLength: String?
    /// The request's `Transfer-Encoding`, if it sent one.
    public var transferEncoding: String?
    /// The body's length in bytes.
    public var length: Int
}
