import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of the session a ``URLSessionTransport`` creates: it refuses redirects, hands a response that
/// asks for credentials back as it is, and collects each task's body chunk by chunk, so that a body larger than
/// the limit is refused while it arrives instead of after it has been buffered whole.
///
/// One delegate serves every task of its session; each task's state lives in an ``URLSessionExchange``
/// found by the task's identifier.
final class URLSessionTransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The exchanges in flight, by task identifier; guarded by the lock.
    private let exchanges = LockedState<[Int: URLSessionExchange]>([:])

    /// Sends `request` as a data task of `session` (whose delegate must be `self`).
    func send(
        _ request: URLRequest,
        on session: URLSession,
        maximumResponseSize: Int
    ) async throws -> (Data, HTTPURLResponse) {
        let exchange = URLSessionExchange(request: request, limit: maximumResponseSize)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request)
                let identifier = task.taskIdentifier
                exchanges.withLock { $0[identifier] = exchange }
                if exchange.start(task, continuation: continuation) {
                    task.resume()
                } else {
                    // Cancelled before the task existed; the exchange has resumed the continuation. The
                    // task never ran; cancelling it lets the session let go of it.
                    _ = exchanges.withLock { $0.removeValue(forKey: identifier) }
                    task.cancel()
                }
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    private func exchange(for task: URLSessionTask) -> URLSessionExchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    // MARK: URLSessionTaskDelegate

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Hand the 3xx back: following it here would send Authorization and Cookie to any origin.
        completionHandler(nil)
    }

    /// A 401 or 407 that asks for credentials is the caller's to handle (Courier's authentication middleware
    /// reads it): the session must neither answer it with a credential of its own nor wait for one.
    ///
    /// On Apple platforms, rejecting the protection space makes the session go on without a credential and
    /// deliver the response. FoundationNetworking issues the challenge only after the whole response has
    /// arrived, cancels the task for a rejected space, and (through Swift 6.3.x) waits until the request times
    /// out for default handling without a credential, or sends one from the session's credential storage
    /// (swift-corelibs-foundation issue 5456). So there the exchange is completed with the response and body it
    /// has received, and the task is cancelled afterwards.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let disposition = Self.disposition(for: challenge)
        #if canImport(FoundationNetworking)
        if disposition == .rejectProtectionSpace {
            let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
            exchange?.complete(error: nil, fallbackResponse: challenge.failureResponse)
            completionHandler(.cancelAuthenticationChallenge, nil)
            return
        }
        #endif
        completionHandler(disposition, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        exchange?.complete(error: error)
    }

    // MARK: URLSessionDelegate

    /// Challenges for the whole session (on Apple platforms: server trust, client certificates, NTLM and
    /// Negotiate), answered as ``urlSession(_:task:didReceive:completionHandler:)`` answers them.
    func urlSession(
        _ session: URLSession,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(Self.disposition(for: challenge), nil)
    }

    /// Server trust and client certificates belong to TLS and keep the system's handling (certificates are
    /// checked as usual); every other method asks for a credential for the request, and the space is rejected,
    /// so that no credential Courier did not put on the request (from credential storage, a default
    /// credential, or URL loading's own handling) is ever sent.
    static func disposition(for challenge: URLAuthenticationChallenge) -> URLSession.AuthChallengeDisposition {
        #if canImport(FoundationNetworking)
        // FoundationNetworking issues no TLS challenges: every one asks for a credential for the request.
        return .rejectProtectionSpace
        #else
        switch challenge.protectionSpace.authenticationMethod {
        case NSURLAuthenticationMethodServerTrust, NSURLAuthenticationMethodClientCertificate:
            return .performDefaultHandling
        default:
            return .rejectProtectionSpace
        }
        #endif
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        exchange(for: dataTask)?.receive(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchange(for: dataTask)?.receive(data)
    }
}

/// One `send` through a ``URLSessionTransportDelegate``: the task, the caller's continuation and the body
/// collected so far; guarded by a lock because the session's callbacks and the caller's cancellation run
/// concurrently.
final class URLSessionExchange: Sendable {
    private enum Phase {
        case idle
        case running(URLSessionTask, CheckedContinuation<(Data, HTTPURLResponse), any Error>)
        case cancelledBeforeStart
        case finished
    }

    private struct State {
        var phase = Phase.idle
        var response: URLResponse?
        var body: ResponseBodyAccumulator
    }

    private let request: URLRequest
    private let state: LockedState<State>

    init(request: URLRequest, limit: Int) {
        self.request = request
        self.state = LockedState(State(body: ResponseBodyAccumulator(limit: limit)))
    }

    /// Records the task and the continuation; returns `false` (after resuming the continuation with
    /// `CancellationError`) when the caller was cancelled already.
    func start(
        _ task: URLSessionTask,
        continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>
    ) -> Bool {
        let started = state.withLock { state in
            guard case .idle = state.phase else {
                state.phase = .finished
                return false
            }
            state.phase = .running(task, continuation)
            return true
        }
        if !started {
            continuation.resume(throwing: CancellationError())
        }
        return started
    }

    /// The caller was cancelled: resume it with `CancellationError` at once and cancel the task.
    ///
    /// FoundationNetworking may deliver a fast body for a while after `cancel()`; the caller does not wait
    /// for that, and the chunks are dropped.
    func cancel() {
        let running: (URLSessionTask, CheckedContinuation<(Data, HTTPURLResponse), any Error>)? =
            state.withLock { state in
                switch state.phase {
                case .idle:
                    state.phase = .cancelledBeforeStart
                    return nil
                case .running(let task, let continuation):
                    state.phase = .finished
                    state.body = ResponseBodyAccumulator(limit: state.body.limit)
                    return (task, continuation)
                case .cancelledBeforeStart, .finished:
                    return nil
                }
            }
        guard let (task, continuation) = running else { return }
        continuation.resume(throwing: CancellationError())
        task.cancel()
    }

    func receive(_ response: URLResponse) {
        let refused: (URLSessionTask, CheckedContinuation<(Data, HTTPURLResponse), any Error>, CourierError)? =
            state.withLock { state in
                guard case .running(let task, let continuation) = state.phase else { return nil }
                state.response = response
                let http = response as? HTTPURLResponse
                let expected = response.expectedContentLength
                if ResponseBodyAccumulator.announcedLengthExceeds(
                    state.body.limit,
                    expectedContentLength: expected,
                    method: request.httpMethod,
                    status: http?.statusCode ?? 200
                ) {
                    state.phase = .finished
                    let error = CourierError.bodyTooLarge(
                        limit: state.body.limit,
                        announcedLength: expected,
                        request: request,
                        response: http,
                        transport: "URLSessionTransport"
                    )
                    return (task, continuation, error)
                }
                state.body.reserve(expectedContentLength: expected)
                return nil
            }
        if let (task, continuation, error) = refused {
            continuation.resume(throwing: error)
            Self.cancelLater(task)
        }
    }

    func receive(_ data: Data) {
        let refused: (URLSessionTask, CheckedContinuation<(Data, HTTPURLResponse), any Error>, CourierError)? =
            state.withLock { state in
                guard case .running(let task, let continuation) = state.phase else { return nil }
                guard !state.body.append(data) else { return nil }
                state.phase = .finished
                let error = CourierError.bodyTooLarge(
                    limit: state.body.limit,
                    request: request,
                    response: state.response as? HTTPURLResponse,
                    transport: "URLSessionTransport"
                )
                return (task, continuation, error)
            }
        if let (task, continuation, error) = refused {
            continuation.resume(throwing: error)
            Self.cancelLater(task)
        }
    }

    /// Ends the exchange: with `error`, or else with the response received (`fallbackResponse` when none was,
    /// as for a challenge issued before the response was delivered) and the body collected.
    func complete(error: (any Error)?, fallbackResponse: URLResponse? = nil) {
        let outcome:
            (CheckedContinuation<(Data, HTTPURLResponse), any Error>, Result<(Data, HTTPURLResponse), any Error>)? =
                state.withLock { state in
                    guard case .running(_, let continuation) = state.phase else { return nil }
                    state.phase = .finished
                    if let error {
                        return (continuation, .failure(error))
                    }
                    guard let response = (state.response ?? fallbackResponse) as? HTTPURLResponse else {
                        let error = CourierError(
                            .nonHTTPResponse,
                            message: "the response is not an HTTP response",
                            request: request
                        )
                        return (continuation, .failure(error))
                    }
                    let body = state.body.data
                    state.body = ResponseBodyAccumulator(limit: state.body.limit)
                    return (continuation, .success((body, response)))
                }
        if let (continuation, result) = outcome {
            continuation.resume(with: result)
        }
    }

    /// Cancels `task` from outside the session's delegate queue: FoundationNetworking ignores a `cancel()`
    /// made synchronously inside a data callback (measured with Swift 6.3.1 on Linux).
    private static func cancelLater(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }
}
