public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Sends a request over the wire (or pretends to, in tests) and returns the response.
///
/// A transport is the end of a ``Client``'s middleware chain. ``URLSessionTransport`` is the default;
/// `CourierTesting` ships `MockTransport`, which plays an API in memory and records what it was sent.
///
/// A transport should:
/// - return any HTTP response as it is, whatever its status (validation is a middleware's job);
/// - not follow redirects itself (redirects are a middleware's job, so that credentials are handled
///   per origin);
/// - observe task cancellation and then throw `CancellationError`.
public protocol Transport: Sendable {
    /// Sends `request` and returns the response body and the HTTP response.
    ///
    /// - Parameter request: A complete request with an absolute URL.
    /// - Throws: `CancellationError` when the task is cancelled, or the transport's own error.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}
