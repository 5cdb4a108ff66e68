public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The default ``Transport``: sends requests with Foundation's `URLSession`.
///
/// - Cancelling the calling task cancels the underlying `URLSessionTask`, and the call throws
///   `CancellationError`.
/// - Redirects are **not** followed by the session (the transport returns the 3xx response), because
///   `URLSession` on Linux forwards `Authorization` and `Cookie` to another origin. Follow redirects with
///   a middleware that strips credentials per origin.
/// - By default each transport has its own in-memory cookie storage and cache (`.ephemeral`): a cookie one
///   client receives is never sent by another client in the same process, and nothing is written to disk.
/// - A response that is not an HTTP response throws ``CourierError/Code/nonHTTPResponse``.
/// - Do not rely on `URLRequest.timeoutInterval` for sub-second timeouts (on Linux it is truncated to
///   whole seconds); use the timeout middleware.
public final class URLSessionTransport: Transport {
    /// The session requests are sent with.
    public let session: URLSession
    /// Whether this transport made the session (and so invalidates it when it goes away).
    private let ownsSession: Bool

    /// Creates a transport with its own session.
    ///
    /// The default is `.ephemeral`, not `.default`: `.default` shares `HTTPCookieStorage.shared` with every
    /// other session in the process, so a `Set-Cookie` received by one client (say, for one tenant) would be
    /// sent by every other client to that host.
    ///
    /// - Parameter configuration: The session's configuration; `.ephemeral` by default.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        self.session = URLSession(
            configuration: configuration,
            delegate: RedirectRefusingDelegate(),
            delegateQueue: nil
        )
        self.ownsSession = true
    }

    /// Creates a transport over an existing session.
    ///
    /// The session's delegate decides whether redirects are followed; give it one that refuses them (returns
    /// `nil` from `urlSession(_:task:willPerformHTTPRedirection:newRequest:completionHandler:)`) if the
    /// session can meet redirects across origins.
    ///
    /// The session stays the caller's: the transport never invalidates it.
    ///
    /// - Parameter session: The session.
    public init(session: URLSession) {
        self.session = session
        self.ownsSession = false
    }

    deinit {
        // Only a session this transport made: invalidating a caller's session would make its next use
        // fail (on Linux, a fatal error).
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// Sends the request with the session.
    ///
    /// - Parameter request: The request.
    /// - Returns: The body and the HTTP response, whatever its status.
    /// - Throws: `CancellationError` when the task is cancelled, ``CourierError/Code/invalidRequest`` for a
    ///   request that cannot be sent safely (see ``RequestValidation``), ``CourierError/Code/nonHTTPResponse``,
    ///   or the session's `URLError`.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try RequestValidation.validate(request)
        let state = TaskState()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        if state.wasCancelled {
                            continuation.resume(throwing: CancellationError())
                        } else {
                            continuation.resume(throwing: error)
                        }
                        return
                    }
                    guard let response = response as? HTTPURLResponse else {
                        continuation.resume(
                            throwing: CourierError(
                                .nonHTTPResponse,
                                message: "the response is not an HTTP response",
                                request: request
                            )
                        )
                        return
                    }
                    continuation.resume(returning: (data ?? Data(), response))
                }
                if state.start(task) {
                    task.resume()
                } else {
                    // Cancelled before the task existed: resume through the completion handler.
                    task.cancel()
                }
            }
        } onCancel: {
            state.cancel()
        }
    }
}

/// The data task of one `send`, and whether it was cancelled; guarded by a mutex because the cancellation
/// handler runs concurrently with the task's creation.
private final class TaskState: Sendable {
    private enum Phase {
        case waiting
        case running(URLSessionTask)
        case cancelled
    }

    private let phase = LockedState<Phase>(.waiting)

    var wasCancelled: Bool {
        phase.withLock {
            if case .cancelled = $0 { return true }
            return false
        }
    }

    /// Records the task; returns `false` when the call was already cancelled.
    func start(_ task: URLSessionTask) -> Bool {
        phase.withLock { phase in
            if case .cancelled = phase { return false }
            phase = .running(task)
            return true
        }
    }

    func cancel() {
        let task: URLSessionTask? = phase.withLock { phase in
            defer { phase = .cancelled }
            if case .running(let task) = phase { return task }
            return nil
        }
        task?.cancel()
    }
}

/// Makes the session hand 3xx responses back instead of following them.
private final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, Sendable {
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
