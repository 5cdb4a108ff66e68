import Foundation

/// What a stored response's own header fields and dates say, as the cache's rules read them
/// (``HTTPCachePolicy/facts(of:)``): worked out once per entry and kept in its ``CachedResponse/Memo``, so that
/// a hit parses neither `Cache-Control` nor a date.
struct StoredFacts: Sendable, Equatable {
    /// The response's `Cache-Control` directives.
    var directives: CacheControl
    /// The response's `Vary` field, as stored.
    var vary: String?
    /// How long the response stays fresh after it was generated, in seconds (RFC 9111 §4.2.1).
    var freshnessLifetime: Double
    /// The response's age when it was received, in seconds (RFC 9111 §4.2.3, `corrected_initial_age`).
    var initialAge: Double
}
