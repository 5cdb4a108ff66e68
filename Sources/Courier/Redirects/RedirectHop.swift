public import Foundation

/// One redirect being followed; see ``RedirectContext``.
public struct RedirectHop: Sendable, Hashable {
    /// The URL of the first request of the chain.
    public var originalURL: URL
    /// The URL this hop requests.
    public var url: URL
    /// 1 for the first redirect followed, 2 for the second, ….
    public var number: Int
    /// The status of the response that asked for this hop (301, 302, 303, 307 or 308).
    public var status: Int
    /// Whether this hop or an earlier one went to another origin (scheme, host or port) than the first
    /// request's. Once a chain has left its origin it never regains credentials: a foreign server could
    /// otherwise send an authenticated request of its choosing back to the original origin.
    public var hasLeftOriginalOrigin: Bool

    /// Creates a hop description.
    ///
    /// - Parameters:
    ///   - originalURL: The URL of the first request of the chain.
    ///   - url: The URL this hop requests.
    ///   - number: 1 for the first redirect followed, 2 for the second, ….
    ///   - status: The status of the response that asked for this hop.
    ///   - hasLeftOriginalOrigin: Whether this or an earlier hop went to another origin.
    public init(originalURL: URL, url: URL, number: Int, status: Int, hasLeftOriginalOrigin: Bool) {
        self.originalURL = originalURL
        self.url = url
        self.number = number
        self.status = status
        self.hasLeftOriginalOrigin = hasLeftOriginalOrigin
    }
}
