public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What a ``Middleware`` calls to pass a request on to the rest of the chain.
///
/// `Next` is a small value (a reference to the client's composed chain and a position in it). It can be
/// called several times, for example by a retry middleware, and it is safe to call from child tasks.
///
/// ```swift
/// Middleware { request, next in
///     let (data, response) = try await next(request)
///     return (data, response)
/// }
/// ```
public struct Next: Sendable {
    @usableFromInline
    let chain: Chain
    @usableFromInline
    let index: Int

    @inlinable
    init(chain: Chain, index: Int) {
        self.chain = chain
        self.index = index
    }

    /// Sends `request` through the rest of the chain and, at its end, the transport.
    ///
    /// - Parameter request: The request to send.
    /// - Returns: The response body and the HTTP response.
    /// - Throws: Whatever the rest of the chain throws: a ``CourierError``, `CancellationError`, or an
    ///   error of a user's own middleware.
    @inlinable
    public func callAsFunction(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await chain.send(request, from: index)
    }

    /// Sends `request` through the rest of the chain; the same as calling `next(request)`.
    ///
    /// - Parameter request: The request to send.
    /// - Returns: The response body and the HTTP response.
    /// - Throws: Whatever the rest of the chain throws.
    @inlinable
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await chain.send(request, from: index)
    }
}
