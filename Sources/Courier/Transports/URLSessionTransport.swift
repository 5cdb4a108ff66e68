public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The default ``Transport``: sends requests with Foundation's `URLSession`.
///
/// ```swift
/// let client = Client(baseURL: baseURL, transport: URLSessionTransport())
/// let large = URLSessionTransport(maximumResponseSize: 256 * 1024 * 1024)   // for big downloads
/// ```
///
/// - **Redirects are not followed** by the session: the transport returns the 3xx response. `URLSession`
///   on Linux forwards `Authorization` and `Cookie` to whatever origin a redirect names. Add
///   ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)`` to follow redirects
///   with credentials stripped per origin.
/// - **Response size**: a body larger than ``maximumResponseSize`` (10 MiB by default) fails with
///   ``CourierError/Code/bodyTooLarge``. A `Content-Length` above the limit fails as soon as the headers
///   arrive; otherwise the body is counted while it arrives, the task is cancelled once it passes the limit,
///   and no more than the limit is ever held in memory. On Linux one exception is out of Courier's reach:
///   FoundationNetworking keeps a redirect's body (301 to 308) to itself until it has all of it, so the limit is
///   applied to it only then (see Choosing a transport in the documentation, for servers you do not trust).
/// - **Its own session**: ``init(configuration:maximumResponseSize:)`` creates a session just for this
///   transport, by default with ``defaultConfiguration``: no cookie storage, no cache and no credential
///   storage shared with the rest of the process (a server calling APIs for many users must not mix their
///   cookies), and no cookie jar at all: a jar matches cookies by host, not port, so it would send a
///   cookie to another origin on the same host, behind the redirect middleware's back. The session is
///   invalidated when the transport is released.
/// - **Cancellation**: cancelling the calling task cancels the `URLSessionTask` and the call throws
///   `CancellationError` at once.
/// - **Timeouts**: do not rely on `URLRequest.timeoutInterval` for sub-second timeouts. On Linux it is
///   truncated to whole seconds, so `0.5` fires after about 1 ms; this transport raises an interval
///   between 0 and 1 second to 1 second on Linux. Use the timeout middleware for real deadlines.
/// - **Deadlines**: with its own session, ``send(_:)`` ends a call by its ``Deadline`` (set by a timeout, a
///   ``Request/timeout``, or by you with `Deadline.$current.withValue`, on a real-time clock): when it passes,
///   the `URLSessionTask` is cancelled and the call fails with ``CourierError/Code/timedOut`` and
///   ``CourierError/timeout`` set; a deadline that has passed fails the request before it is sent. Under a
///   timeout middleware's deadline that timeout's shared timer ends the exchange, so a timeout runs no child task
///   of its own over this transport. With ``init(session:maximumResponseSize:)`` the timeout enforces the
///   deadline instead.
/// - **Authentication challenges**: a 401 or 407 that asks for credentials (`WWW-Authenticate: Basic`,
///   `Digest`, `Negotiate`, `Proxy-Authenticate`, …) is returned at once as a response, with its body, for
///   Courier's middleware to handle. The session never answers it with a credential: not from its credential
///   storage, nor by URL loading's default handling. TLS challenges (server trust, client certificates) keep
///   the system's handling. With ``init(session:maximumResponseSize:)`` this is your session delegate's to do.
/// - A response that is not an HTTP response throws ``CourierError/Code/nonHTTPResponse``. A session failure
///   that names a connection problem (cannot connect, connection lost, timed out, host not found) throws a
///   ``CourierError/Code/transport`` error that says so (`cannot connect to 127.0.0.1:8080`), with the
///   `URLError` as ``CourierError/underlying``; any other failure throws its `URLError`, which the client
///   reports as ``CourierError/Code/transport``.
public final class URLSessionTransport: Transport {
    /// The response size limit used when none is given: 10 MiB.
    ///
    /// API responses are rarely larger; the limit protects a process from a server (or a man in the middle)
    /// that answers with an endless or huge body. Pass a larger `maximumResponseSize` for downloads.
    public static let defaultMaximumResponseSize = 10 * 1024 * 1024

    /// A new configuration for a transport's own session: ephemeral, with no cookie storage, no cookies
    /// set on requests, no URL cache and no credential storage.
    ///
    /// Start from it to change other settings:
    ///
    /// ```swift
    /// let configuration = URLSessionTransport.defaultConfiguration
    /// configuration.httpMaximumConnectionsPerHost = 32
    /// let transport = URLSessionTransport(configuration: configuration)
    /// ```
    public static var defaultConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    /// The session requests are sent with.
    public let session: URLSession

    /// The largest response body, in bytes, that the transport accepts from ``send(_:)``. A streamed body may
    /// be of any length; on Linux this is how far its reader may fall behind (see ``stream(_:)``).
    public let maximumResponseSize: Int

    /// The session's delegate when it is one of this type's (then bodies are limited while they arrive).
    private let delegate: URLSessionTransportDelegate?

    /// Whether the transport created the session and must invalidate it.
    private let ownsSession: Bool

    /// Creates a transport with its own session.
    ///
    /// - Parameters:
    ///   - configuration: The session's configuration; ``defaultConfiguration`` by default.
    ///   - maximumResponseSize: The largest response body accepted, in bytes;
    ///     ``defaultMaximumResponseSize`` (10 MiB) by default.
    public convenience init(
        configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration,
        maximumResponseSize: Int = URLSessionTransport.defaultMaximumResponseSize
    ) {
        let delegate = URLSessionTransportDelegate()
        self.init(
            session: URLSession(configuration: Self.bounded(configuration), delegate: delegate, delegateQueue: nil),
            maximumResponseSize: maximumResponseSize,
            ownsSession: true
        )
    }

    /// Creates a transport over an existing session, which the transport does not invalidate.
    ///
    /// Prefer ``init(configuration:maximumResponseSize:)``. With a session of your own:
    /// - the session's delegate decides whether redirects are followed: give it one that refuses them
    ///   (calls the completion handler of
    ///   `urlSession(_:task:willPerformHTTPRedirection:newRequest:completionHandler:)` with `nil`) if the
    ///   session can meet a redirect to another origin;
    /// - the body is collected by the session and checked against `maximumResponseSize` only when it is
    ///   complete, so a huge body is buffered before it is refused;
    /// - on Linux, the body of a 3xx response comes back empty;
    /// - on Linux, a session whose `timeoutIntervalForRequest` is infinite, not a number or beyond 10⁹ seconds fails
    ///   every request with ``CourierError/Code/invalidRequest``: FoundationNetworking would crash the process on it
    ///   (``init(configuration:maximumResponseSize:)`` sends such an interval as 10⁹ seconds);
    /// - the session's delegate answers authentication challenges. On Linux through Swift 6.3, a session whose
    ///   delegate does not answer them waits until the request times out on a 401 with
    ///   `WWW-Authenticate: Basic realm=…` (swift-corelibs-foundation issue 5456; fixed for Swift 6.4), and
    ///   a session with credential storage sends a stored credential in answer.
    ///
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - maximumResponseSize: The largest response body accepted, in bytes;
    ///     ``defaultMaximumResponseSize`` (10 MiB) by default.
    public convenience init(
        session: URLSession,
        maximumResponseSize: Int = URLSessionTransport.defaultMaximumResponseSize
    ) {
        self.init(session: session, maximumResponseSize: maximumResponseSize, ownsSession: false)
    }

    private init(session: URLSession, maximumResponseSize: Int, ownsSession: Bool) {
        precondition(maximumResponseSize >= 0, "maximumResponseSize must not be negative")
        self.session = session
        self.delegate = session.delegate as? URLSessionTransportDelegate
        self.maximumResponseSize = maximumResponseSize
        self.ownsSession = ownsSession
        #if canImport(FoundationNetworking)
        sessionTimeoutIsUnbounded =
            !(session.configuration.timeoutIntervalForRequest.magnitude <= Self.longestTimeoutInterval)
        #else
        sessionTimeoutIsUnbounded = false
        #endif
    }

    /// Whether the session's `timeoutIntervalForRequest` is one FoundationNetworking traps on (infinite, not a
    /// number, beyond ±2⁶³ ms), for every request, whatever the request's own interval: only a caller's session can
    /// have one (``init(configuration:maximumResponseSize:)`` bounds it), and each request over it then fails with
    /// ``CourierError/Code/invalidRequest`` instead of crashing the process. Read once: a session's configuration is
    /// a copy each time it is asked for.
    private let sessionTimeoutIsUnbounded: Bool

    /// A copy of `configuration` whose `timeoutIntervalForRequest` FoundationNetworking can convert: one it would
    /// trap on is ``longestTimeoutInterval``; `configuration` itself when it needs no change.
    static func bounded(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
        #if canImport(FoundationNetworking)
        guard !(configuration.timeoutIntervalForRequest.magnitude <= longestTimeoutInterval),
            let copy = configuration.copy() as? URLSessionConfiguration
        else { return configuration }
        copy.timeoutIntervalForRequest = longestTimeoutInterval
        return copy
        #else
        return configuration
        #endif
    }

    /// A request's `timeoutInterval` made safe to send (``raiseSubsecondTimeout(_:)``); over a caller's session
    /// whose own timeout FoundationNetworking would trap on, an error instead.
    private func prepareTimeout(_ request: inout URLRequest) throws {
        if sessionTimeoutIsUnbounded {
            throw CourierError(
                .invalidRequest,
                message: "the session's timeoutIntervalForRequest is infinite, not a number or too large for "
                    + "FoundationNetworking, which would crash on it; use a finite one (a .timeout bounds the call)",
                request: request
            )
        }
        Self.raiseSubsecondTimeout(&request)
    }

    deinit {
        // Only a session this transport made: invalidating a caller's session would make its next use
        // fail (on Linux, a fatal error).
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// Sends the request with the session.
    ///
    /// - Returns: The body and the HTTP response, whatever its status (a 3xx included).
    /// - Throws: `CancellationError` when the task is cancelled, ``CourierError/Code/invalidRequest`` for a
    ///   request that cannot be sent safely (see ``RequestValidation``), ``CourierError/Code/bodyTooLarge``,
    ///   ``CourierError/Code/nonHTTPResponse``, ``CourierError/Code/transport`` for a connection failure, or the
    ///   session's `URLError`.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try RequestValidation.validate(request)
        var request = request
        try prepareTimeout(&request)
        do {
            if let delegate {
                if let deadline = Deadline.current, deadline.isRealTime, !deadline.isEnforcedAbove {
                    return try await delegate.send(
                        request,
                        on: session,
                        maximumResponseSize: maximumResponseSize,
                        by: deadline
                    )
                }
                return try await delegate.send(request, on: session, maximumResponseSize: maximumResponseSize)
            }
            return try await sendWithCompletionHandler(request)
        } catch let error as URLError {
            throw TransportFailure.describing(error, request: request)
        }
    }

    /// Sends the request with the session and returns as soon as the response head arrives, with the body
    /// streaming.
    ///
    /// - **Memory**: ``maximumResponseSize`` does not limit the length of a streamed body (a 1 GiB download
    ///   streams); it limits how far its reader may fall behind. On Apple platforms the data task is suspended
    ///   while the reader is more than about 1 MiB behind, and resumed when it catches up. On Linux a running
    ///   task cannot be paused (swift-corelibs-foundation's `suspend()` does not stop libcurl, and `resume()`
    ///   sends the request again), so the body arrives as fast as the network delivers it: once more than
    ///   ``maximumResponseSize`` bytes have arrived while the reader is behind, the body fails with
    ///   ``CourierError/Code/bodyTooLarge`` and the task is cancelled. A reader that keeps up never sees it; for
    ///   a reader that is slower than the network, use `AsyncHTTPClientTransport`, which waits for the reader.
    /// - **Stopping**: when the body's reader stops (leaves its loop, is cancelled, drops the body), the task
    ///   is cancelled and the connection closed. Cancelling the calling task before the head arrives throws
    ///   `CancellationError`.
    /// - **Challenges**: a 401 or 407 that asks for credentials is returned as it is, as by ``send(_:)``.
    /// - With ``init(session:maximumResponseSize:)`` and a session whose delegate is not one of this
    ///   transport's, the body is collected by ``send(_:)`` and arrives whole, as one chunk.
    ///
    /// - Throws: What ``send(_:)`` throws while waiting for the head.
    public func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        guard let delegate else {
            let (data, response) = try await send(request)
            return (StreamedBody(data), response)
        }
        try RequestValidation.validate(request)
        var request = request
        try prepareTimeout(&request)
        return try await delegate.stream(request, on: session, readAheadLimit: maximumResponseSize)
    }

    /// On Linux, FoundationNetworking truncates `timeoutInterval` to whole seconds, so an interval below one
    /// second fires at once; raise it to one second there. It also converts the interval's milliseconds with a
    /// trapping `Int(_:)`, so an infinite interval (what "no URLSession timeout, Courier's deadline applies" reads
    /// as), one that is not a number or one beyond ±2⁶³ milliseconds would crash the process: such an interval is
    /// sent as ``longestTimeoutInterval``. Changes (and so copies) the request only then.
    static func raiseSubsecondTimeout(_ request: inout URLRequest) {
        #if canImport(FoundationNetworking)
        let interval = request.timeoutInterval
        if interval > 0 && interval < 1 {
            request.timeoutInterval = 1
        } else if !(interval.magnitude <= longestTimeoutInterval) {
            request.timeoutInterval = longestTimeoutInterval
        }
        #endif
    }

    /// The longest `timeoutInterval` sent on Linux: about 31 years, far beyond any deadline, and far within what
    /// FoundationNetworking converts.
    static let longestTimeoutInterval: TimeInterval = 1e9

    /// Sends with a session that has no ``URLSessionTransportDelegate``: the session collects the body.
    private func sendWithCompletionHandler(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let state = TaskState()
        let limit = maximumResponseSize
        let session = session
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Off the cooperative pool: `dataTask(with:)` and `resume()` wait for FoundationNetworking's work
                // queue (see `URLSessionTaskQueue`).
                URLSessionTaskQueue.queue.async {
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
                        if let problem = ResponseHeadCheck.problem(with: response, request: request) {
                            continuation.resume(throwing: problem)
                            return
                        }
                        let data = data ?? Data()
                        guard data.count <= limit else {
                            continuation.resume(
                                throwing: CourierError.bodyTooLarge(
                                    limit: limit,
                                    request: request,
                                    response: response,
                                    transport: "URLSessionTransport"
                                )
                            )
                            return
                        }
                        continuation.resume(returning: (data, response))
                    }
                    if request.httpBodyStream != nil { task.delegate = BodyStreamRenewal.shared }
                    if state.start(task) {
                        task.resume()
                    } else {
                        // Cancelled before the task existed: resume through the completion handler.
                        task.cancel()
                    }
                }
            }
        } onCancel: {
            state.cancel()
        }
    }
}

/// The transport ends a call by its ``Deadline`` itself when it runs its own delegate (see
/// ``URLSessionTransportDelegate/send(_:on:maximumResponseSize:by:)``), so a timeout above it needs no child task.
/// With a session of your own it collects through a completion handler, and leaves the deadline to the timeout.
extension URLSessionTransport: DeadlineEnforcingTransport {
    func enforces(_ deadline: Deadline) -> Bool {
        delegate != nil && deadline.isRealTime
    }
}

/// The data task of one `send`, and whether it was cancelled; guarded by a mutex because the cancellation
/// handler runs concurrently with the task's creation. No separate state machine: three phases, each method one
/// transition of a few lines, and the only action (cancelling the task) is taken outside the lock.
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
        guard let task else { return }
        // A stalled upload holds the work queue `cancel()` waits for (see `URLSessionTaskExchange.cancel()`).
        UploadBodyStream.abort(of: task)
        URLSessionTaskQueue.queue.async { task.cancel() }
    }
}
