public import Foundation

/// A response as an ``HTTPCacheStore`` keeps it: status, headers, body, when it was requested and received,
/// and the request header values its `Vary` field selected.
///
/// It is `Codable`, so a store shared by several replicas (in a database or a key-value store they already
/// run) can serialize it. It holds no credential: requests that carried one are told apart by
/// ``HTTPCacheKey/partition``, an opaque value from which the credential cannot be recovered.
///
/// The cache works out what the stored fields say (their `Cache-Control` directives, how long the response
/// stays fresh, its age when it arrived) and the `HTTPURLResponse` it serves once per entry rather than on
/// every hit, and keeps them beside the entry: every copy of a value shares them, changing the status, the
/// header fields or a date starts afresh, and they take no part in equality, hashing or the encoded form.
public struct CachedResponse: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The response's status code.
    public var statusCode: Int {
        didSet { memo = Memo() }
    }
    /// The response's header fields, as received (and as updated by later `304` responses).
    public var headers: [String: String] {
        didSet { memo = Memo() }
    }
    /// The response body (empty for a `HEAD` response).
    public var body: Data
    /// When the request that produced this response was sent (the cache's clock).
    public var requestDate: Date {
        didSet { memo = Memo() }
    }
    /// When the response was received (the cache's clock).
    public var responseDate: Date {
        didSet { memo = Memo() }
    }
    /// The values, in the request, of the header fields the response's `Vary` field names: lowercased name,
    /// then the value, one field per line, sorted by name. Empty when the response has no `Vary` field. A
    /// store keeps one response per variant: storing another with the same key and variant replaces it.
    public var variant: String

    /// What the cache derived from the properties above (see ``Memo``); replaced whenever one of those it
    /// depends on changes.
    private(set) var memo = Memo()

    /// The properties a store keeps: the memo is derived from them and never encoded.
    private enum CodingKeys: String, CodingKey {
        case statusCode, headers, body, requestDate, responseDate, variant
    }

    init(
        statusCode: Int,
        headers: [String: String],
        body: Data,
        requestDate: Date,
        responseDate: Date,
        variant: String
    ) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.requestDate = requestDate
        self.responseDate = responseDate
        self.variant = variant
    }

    /// What the cache derives from this response's own fields, worked out on first use and then kept with
    /// the entry (``HTTPCachePolicy/facts(of:)``).
    var facts: StoredFacts { memo.facts(of: self) }

    /// What the entry costs in an in-memory store: the body, the header names and values, and the variant.
    public var size: Int {
        headers.reduce(body.count + variant.utf8.count) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// The status, the number of header fields and the body's size; never a header value or the body, which
    /// may hold anything the server sent.
    public var description: String {
        "CachedResponse(status \(statusCode), \(headers.count) header fields, \(body.count) bytes)"
    }

    /// The value of a header field, its name compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.headerValue(name)
    }
}
