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

    /// Sends `request` and returns as soon as the response head has arrived, with the body still arriving.
    ///
    /// ``Client/stream(_:idleTimeout:totalTimeout:clock:)-(URLRequest,_,_,_)`` calls it. A transport that
    /// streams should:
    /// - return when the head arrives, and write the body's chunks into the ``StreamedBody`` as they arrive,
    ///   reading no further ahead than the body's backpressure allows;
    /// - stop (cancel its task, close the connection) when the body is stopped or dropped by its reader;
    /// - observe task cancellation while waiting for the head, and then throw `CancellationError`.
    ///
    /// The default implementation calls ``send(_:)`` and returns its body as one chunk, so a transport that
    /// cannot stream still works (its bodies are held whole in memory).
    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse)
}

extension Transport {
    /// Sends the request with ``send(_:)`` and returns its whole body as one chunk.
    public func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let (data, response) = try await send(request)
        return (StreamedBody(data), response)
    }
}

/// A transport that ends a call by its ``Deadline``: when ``Deadline/current`` passes during `send(_:)`, the
/// transport stops the exchange (closing or resetting the connection, so that the server sees it) and throws
/// promptly, with ``CourierError/Code/timedOut`` or any error.
///
/// A timeout whose lower layers all wait within the deadline then runs them in the caller's own task,
/// instead of in a child task it would cancel at the deadline: one task switch fewer per request on a real
/// transport (see `TimeoutRunner` and Benchmarks/RESULTS.md). Internal: the contract is the transport's own
/// code, tested end to end; a third-party transport goes through the child task.
protocol DeadlineEnforcingTransport: Transport {
    /// Whether the transport enforces `deadline`: a network library can only be handed a deadline on a clock
    /// that runs in real time.
    func enforces(_ deadline: Deadline) -> Bool
}
