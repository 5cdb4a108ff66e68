public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Hooks around every request: headers to add, a change before sending, and what to do after.
///
/// Every requirement has a default that does nothing, so a behavior implements only what it needs.
/// Install one with ``Middleware/behavior(_:)``; combine several with ``CombinedBehavior``.
///
/// ```swift
/// struct ActivityIndicator: RequestBehavior {
///     let activity: ActivityTracker          // your actor
///     func beforeSend(_ request: inout URLRequest) async throws { await activity.begin() }
///     func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async {
///         await activity.end()
///     }
///     func afterFailure(_ error: any Error, for request: URLRequest) async { await activity.end() }
///     func afterCancellation(for request: URLRequest) async { await activity.end() }
/// }
/// ```
///
/// For one request through ``Middleware/behavior(_:)``, in this order:
/// 1. ``additionalHeaders`` are set on the request (replacing values of the same name);
/// 2. ``beforeSend(_:)`` may change the request further, or throw to stop it;
/// 3. the request goes on down the chain;
/// 4. exactly one of ``afterSuccess(_:data:for:)`` (a response arrived, whatever its status),
///    ``afterFailure(_:for:)`` (the chain, or `beforeSend`, threw) or ``afterCancellation(for:)`` (the
///    request was cancelled) is called, and then the result or error is passed on unchanged.
///
/// **Cancellation is not a failure**: a `CancellationError` goes to ``afterCancellation(for:)``, never to
/// ``afterFailure(_:for:)``, so "count the failures" behaviors do not count callers that went away. A timeout is a
/// failure wherever it sits: one above the behavior that cancels the request at its deadline reaches
/// ``afterFailure(_:for:)`` with its ``CourierError/Code/timedOut`` error, as one below does.
public protocol RequestBehavior: Sendable {
    /// Header fields set on every request before ``beforeSend(_:)``; empty by default.
    ///
    /// Read once per request, so it may change over time. A name that is not an HTTP token or a value
    /// with CR, LF or NUL fails the request with ``CourierError/Code/invalidRequest`` before it is sent.
    var additionalHeaders: HTTPHeaders { get }

    /// Changes the request before it is sent; does nothing by default.
    ///
    /// - Parameter request: The request, with ``additionalHeaders`` already set.
    /// - Throws: Any error, to stop the request; it is passed to ``afterFailure(_:for:)`` and then to
    ///   the caller.
    func beforeSend(_ request: inout URLRequest) async throws

    /// Called when a response arrived, whatever its status; does nothing by default.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - data: The response body.
    ///   - request: The request as it was sent on.
    func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async

    /// Called when the request failed; does nothing by default. Not called for cancellation.
    ///
    /// - Parameters:
    ///   - error: The error, which is then passed on unchanged.
    ///   - request: The request as it was sent on (or as far as it got).
    func afterFailure(_ error: any Error, for request: URLRequest) async

    /// Called when the request was cancelled; does nothing by default.
    ///
    /// - Parameter request: The request as it was sent on (or as far as it got).
    func afterCancellation(for request: URLRequest) async
}

extension RequestBehavior {
    /// No additional headers.
    public var additionalHeaders: HTTPHeaders { HTTPHeaders() }

    /// Leaves the request as it is.
    ///
    /// - Throws: Never.
    public func beforeSend(_ request: inout URLRequest) async throws {}

    /// Does nothing.
    public func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async {}

    /// Does nothing.
    public func afterFailure(_ error: any Error, for request: URLRequest) async {}

    /// Does nothing.
    public func afterCancellation(for request: URLRequest) async {}
}

/// A behavior that does nothing, for when a behavior is required and you have none (instead of an
/// optional).
///
/// ```swift
/// let behavior: any RequestBehavior = isDebug ? RequestPrinter() : EmptyBehavior()
/// ```
public struct EmptyBehavior: RequestBehavior {
    /// Creates the empty behavior.
    public init() {}
}
