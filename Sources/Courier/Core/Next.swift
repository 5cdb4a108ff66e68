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

    /// Whether the transport enforces `deadline` for the rest of the chain (every layer left waits only
    /// within it); see `DeadlineEnforcingTransport`.
    func transportEnforces(_ deadline: Deadline) -> Bool {
        chain.transportEnforces(deadline, from: index)
    }

    /// The origin of the client's base URL, or `nil` when it has none (see ``CredentialOrigins``).
    var baseOrigin: HTTPOrigin? {
        chain.baseOrigin
    }

    @inlinable
    init(chain: Chain, index: Int) {
        self.chain = chain
        self.index = index
    }

    /// Sends `request` through the rest of the chain and, at its end, the transport: `next(request)`.
    ///
    /// - Throws: Whatever the rest of the chain throws: a ``CourierError``, `CancellationError`, or an
    ///   error of a user's own middleware.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func callAsFunction(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Inlined into the calling middleware's closure, which so calls the next closure (or the
        // transport) itself; see `Chain` for why.
        guard index < chain.middleware.count else {
            do {
                // A logging or timing layer above times the transport (see `CallRecord`); otherwise this
                // look-up is all it costs.
                if let record = CallRecord.timingTransport {
                    return try await record.timingExchange(request, with: chain.transport)
                }
                return try await chain.transport.send(request)
            } catch {
                throw Chain.transportFailure(error, request: request)
            }
        }
        let handler = chain.middleware[index].handler
        do {
            return try await handler(request, Next(chain: chain, index: index + 1))
        } catch {
            throw Chain.attributing(error, to: chain.middleware[index].name)
        }
    }
}
