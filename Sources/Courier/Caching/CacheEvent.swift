public import Foundation

/// What an ``HTTPCache`` did with a request or a response, delivered to its `onEvent` callback. With the
/// Metrics trait, pass `ClientMetrics.recordCacheEvent(_:)` to count them; with the Logging trait,
/// `CacheEvent.logging(to:level:)` to log them.
///
/// ```swift
/// let cache = HTTPCache(onEvent: { event in print(event) })   // "hit GET https://api.example.com/users/42"
/// ```
///
/// An event holds the method and the URL, never a header: its ``description`` redacts the URL (see
/// ``Redaction``).
public struct CacheEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: String, Sendable, CaseIterable {
        /// A fresh stored response answered the request; nothing was sent.
        case hit
        /// Nothing usable was stored; the request went to the server.
        case miss
        /// The server answered a conditional request with `304`; the stored response, updated, answered it.
        case revalidated
        /// A response was stored (or replaced the stored one).
        case stored
        /// An unsafe request removed the stored responses of a resource.
        case invalidated
        /// The server failed (an error, or 500, 502, 503 or 504) and a stale response that allows it
        /// (`stale-if-error`) answered instead.
        case staleIfError
        /// The store threw; the request went on as if nothing were stored, or the response stayed unstored.
        case storeFailed
    }

    /// What happened.
    public let kind: Kind
    /// The request's method.
    public let method: String
    /// The URL concerned: the request's, or for ``Kind/invalidated`` the resource removed.
    public let url: URL

    /// The kind, the method and the redacted URL, for example `hit GET https://api.example.com/users/42`.
    public var description: String {
        "\(kind.rawValue) \(method) \(Redaction.redactedURL(url))"
    }
}
