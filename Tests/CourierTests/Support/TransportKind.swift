import Courier
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real transports, for tests that run the same exchange over each against a ``SocketServer``.
///
/// `AsyncHTTPClientTransport` joins the list when the package is built with the `AsyncHTTPClient` trait.
enum TransportKind: String, CaseIterable, NamedByRawValue, Sendable {
    /// `URLSessionTransport()` with its own session (bodies limited while they arrive).
    case urlSession
    /// `URLSessionTransport(session:)` over a session of the caller's that refuses redirects (the session
    /// collects bodies with a completion handler).
    case urlSessionCallersSession
    #if AsyncHTTPClient
    /// `AsyncHTTPClientTransport()` owning its `HTTPClient`.
    case asyncHTTPClient
    #endif

    /// The kinds that refuse a body too large while it arrives, not only once it is complete.
    static var limitingWhileReceiving: [TransportKind] {
        allCases.filter { $0 != .urlSessionCallersSession }
    }

    /// The kinds that end a call by its ``Deadline`` themselves (see `DeadlineEnforcingTransport`): with a session
    /// of the caller's, `URLSessionTransport` leaves the deadline to the timeout.
    static var enforcingDeadlines: [TransportKind] {
        allCases.filter { $0 != .urlSessionCallersSession }
    }

    /// The kinds that return the body of a 3xx response (FoundationNetworking's completion handler drops it).
    static var deliveringRedirectBodies: [TransportKind] {
        allCases.filter { $0 != .urlSessionCallersSession }
    }

    /// Runs `body` with a new transport of this kind and releases it (shutting it down if needed) afterwards.
    func withTransport<T>(
        maximumResponseSize: Int = URLSessionTransport.defaultMaximumResponseSize,
        _ body: (any Transport) async throws -> T
    ) async throws -> T {
        switch self {
        case .urlSession:
            return try await body(URLSessionTransport(maximumResponseSize: maximumResponseSize))
        case .urlSessionCallersSession:
            let session = URLSession(
                configuration: URLSessionTransport.defaultConfiguration,
                delegate: RefusingRedirects(),
                delegateQueue: nil
            )
            defer { session.finishTasksAndInvalidate() }
            return try await body(URLSessionTransport(session: session, maximumResponseSize: maximumResponseSize))
        #if AsyncHTTPClient
        case .asyncHTTPClient:
            let transport = AsyncHTTPClientTransport(maximumResponseSize: maximumResponseSize)
            let result = await outcome { try await body(transport) }
            try await transport.shutdown()
            return try result.get()
        #endif
        }
    }
}

/// A session delegate that refuses every redirect, as ``URLSessionTransport/init(session:maximumResponseSize:)``
/// asks of a caller's session.
final class RefusingRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

/// Runs `body` and returns how it ended, so that clean-up (an `async` shutdown) can run before the outcome is
/// checked.
func outcome<T>(of body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

extension Result {
    /// The error, when this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
