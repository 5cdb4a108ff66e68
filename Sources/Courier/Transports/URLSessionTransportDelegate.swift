import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of the session a ``URLSessionTransport`` creates: it refuses redirects, hands a response that
/// asks for credentials back as it is, and collects each task's body chunk by chunk, so that a body larger than
/// the limit is refused while it arrives instead of after it has been buffered whole.
///
/// One delegate serves every task of its session; each task's state lives in an ``URLSessionExchange`` (a
/// buffered call) or an ``URLSessionStreamExchange`` (a streamed call) found by the task's identifier.
final class URLSessionTransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The exchanges in flight, by task identifier. No state machine: a map that is only added to, read and
    /// removed from; each exchange's transitions are ``URLSessionExchangeStateMachine``'s.
    private let exchanges = LockedState<[Int: URLSessionExchange]>([:])

    /// The streamed calls in flight, by task identifier: a map of their own, so that a buffered call's
    /// callbacks find their exchange with one lookup, as before streaming existed.
    private let streams = LockedState<[Int: URLSessionStreamExchange]>([:])

    /// Sends `request` as a data task of `session` (whose delegate must be `self`).
    func send(
        _ request: URLRequest,
        on session: URLSession,
        maximumResponseSize: Int
    ) async throws -> (Data, HTTPURLResponse) {
        try await run(
            URLSessionExchange(request: request, limit: maximumResponseSize),
            request,
            on: session,
            in: exchanges
        )
    }

    /// Sends `request` as ``send(_:on:maximumResponseSize:)`` does, ended when `deadline` (a real-time one) passes:
    /// the exchange is cancelled, the connection closed, and the call fails with ``CourierError/Code/timedOut``.
    ///
    /// Under a timeout middleware's deadline the exchange is lent to the work that timeout armed in its shared timer
    /// (``DeadlineTimer/attach(_:cancelling:)``), whose driver cancels the exchange at the deadline: the call waits
    /// in the caller's own task, with no child task and no timer of its own, and the caller's task is never
    /// cancelled. Under a deadline set any other way, or while another attempt holds the work (hedging), the
    /// exchange races a timer of its own (`TimeoutRunner.run(until:request:operation:)`).
    func send(
        _ request: URLRequest,
        on session: URLSession,
        maximumResponseSize: Int,
        by deadline: Deadline
    ) async throws -> (Data, HTTPURLResponse) {
        guard !deadline.hasPassed else { throw deadline.passedError(for: request) }
        let exchange = URLSessionExchange(request: request, limit: maximumResponseSize)
        guard let work = deadline.work, let owner = work.owner,
            owner.attach(work, cancelling: { exchange.cancel() })
        else {
            return try await TimeoutRunner.run(until: deadline, request: request) { request in
                try await self.send(request, on: session, maximumResponseSize: maximumResponseSize)
            }
        }
        do {
            let output = try await run(exchange, request, on: session, in: exchanges)
            await owner.detach(work)
            return output
        } catch {
            await owner.detach(work)
            // Cancelled by the timer: the deadline passed. The caller's own cancellation wins over it.
            guard work.didFire, !Task.isCancelled else { throw error }
            throw deadline.passedError(for: request)
        }
    }

    /// Sends `request` as a data task of `session` (whose delegate must be `self`) and returns when the head
    /// arrives, with the body streaming.
    ///
    /// - Parameter readAheadLimit: Where a task cannot be paused (Linux), the most bytes that may arrive
    ///   while the reader is behind before the body fails.
    func stream(
        _ request: URLRequest,
        on session: URLSession,
        readAheadLimit: Int
    ) async throws -> (StreamedBody, HTTPURLResponse) {
        let exchange = URLSessionStreamExchange(request: request, readAheadLimit: readAheadLimit)
        return try await run(exchange, request, on: session, in: streams)
    }

    /// Runs `request` as a data task of `session` for `exchange`, found in `map` by the task's identifier while
    /// it runs; cancelling the calling task cancels the exchange.
    private func run<Exchange: URLSessionTaskExchange>(
        _ exchange: Exchange,
        _ request: URLRequest,
        on session: URLSession,
        in map: LockedState<[Int: Exchange]>
    ) async throws -> Exchange.Output {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                #if DEBUG
                URLSessionTaskQueue.startObserver.withLock { $0 }?(request)
                #endif
                // Off the cooperative pool: `dataTask(with:)` and `resume()` wait for the work queue (see
                // ``URLSessionTaskQueue``).
                URLSessionTaskQueue.queue.async {
                    let task = session.dataTask(with: request)
                    let identifier = task.taskIdentifier
                    map.withLock { $0[identifier] = exchange }
                    if exchange.start(task, continuation: continuation) {
                        task.resume()
                    } else {
                        // Cancelled before the task existed; the exchange has resumed the continuation. The
                        // task never ran; cancelling it lets the session let go of it.
                        _ = map.withLock { $0.removeValue(forKey: identifier) }
                        task.cancel()
                    }
                }
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    private func exchange(for task: URLSessionTask) -> URLSessionExchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    private func stream(for task: URLSessionTask) -> URLSessionStreamExchange? {
        streams.withLock { $0[task.taskIdentifier] }
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
            if let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
                exchange.complete(error: nil, fallbackResponse: challenge.failureResponse)
            } else {
                let stream = streams.withLock { $0.removeValue(forKey: task.taskIdentifier) }
                stream?.complete(error: nil, fallbackResponse: challenge.failureResponse)
            }
            completionHandler(.cancelAuthenticationChallenge, nil)
            return
        }
        #endif
        completionHandler(disposition, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
            exchange.complete(error: error)
            return
        }
        streams.withLock { $0.removeValue(forKey: task.taskIdentifier) }?.complete(error: error)
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

    /// A session that sends a request again by itself asks for its body from the first byte: libcurl does, on
    /// Linux, when a kept-alive connection closed before any response. Without an answer FoundationNetworking goes
    /// on reading the consumed stream, and the copy goes out with whatever is left of it (usually nothing) as its
    /// whole body; see ``Replay/renewedBodyStream(for:)``.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        completionHandler(Replay.renewedBodyStream(for: task.originalRequest))
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let exchange = exchange(for: dataTask) {
            exchange.receive(response)
        } else {
            stream(for: dataTask)?.receive(response)
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let exchange = exchange(for: dataTask) {
            exchange.receive(data)
            return
        }
        stream(for: dataTask)?.receive(data)
    }
}

/// One `send` through a ``URLSessionTransportDelegate``: the task, the caller's continuation and the body
/// collected so far; guarded by a lock because the session's callbacks and the caller's cancellation run
/// concurrently. The transitions are ``URLSessionExchangeStateMachine``'s; this type carries out what it returns
/// (resuming, cancelling, building the error) outside the lock.
final class URLSessionExchange: URLSessionTaskExchange {
    typealias Continuation = CheckedContinuation<(Data, HTTPURLResponse), any Error>
    private typealias Machine = URLSessionExchangeStateMachine<URLSessionTask, Continuation>

    private let request: URLRequest
    private let state: LockedState<Machine>

    init(request: URLRequest, limit: Int) {
        self.request = request
        self.state = LockedState(Machine(method: request.httpMethod, limit: limit))
    }

    func record(_ task: URLSessionTask, _ continuation: Continuation) -> Bool {
        state.withLock { $0.start(task, continuation: continuation) }
    }

    /// FoundationNetworking may deliver a fast body for a while after `cancel()`; the caller does not wait
    /// for that, and the chunks are dropped.
    func takeForCancellation() -> (URLSessionTask, Continuation)? {
        state.withLock { $0.cancel() }
    }

    func receive(_ response: URLResponse) {
        if let http = response as? HTTPURLResponse,
            let problem = ResponseHeadCheck.problem(with: http, request: request)
        {
            guard let (task, continuation) = state.withLock({ $0.refuseHead() }) else { return }
            continuation.resume(throwing: problem)
            Self.cancelLater(task)
            return
        }
        if let refusal = state.withLock({ $0.receive(response) }) { refuse(refusal) }
    }

    func receive(_ data: Data) {
        if let refusal = state.withLock({ $0.receive(data) }) { refuse(refusal) }
    }

    /// Ends the exchange: with `error`, or else with the response received (`fallbackResponse` when none was,
    /// as for a challenge issued before the response was delivered) and the body collected.
    func complete(error: (any Error)?, fallbackResponse: URLResponse? = nil) {
        switch state.withLock({ $0.complete(error: error, fallbackResponse: fallbackResponse) }) {
        case .none:
            break
        case .succeed(let continuation, let data, let response):
            // A head that came with a challenge (Linux) may not have been through `receive(_:)`.
            if fallbackResponse != nil, let problem = ResponseHeadCheck.problem(with: response, request: request) {
                continuation.resume(throwing: problem)
            } else {
                continuation.resume(returning: (data, response))
            }
        case .fail(let continuation, let error):
            continuation.resume(throwing: error)
        case .failNotHTTP(let continuation):
            continuation.resume(
                throwing: CourierError(
                    .nonHTTPResponse,
                    message: "the response is not an HTTP response",
                    request: request
                )
            )
        }
    }

    private func refuse(_ refusal: Machine.Refusal) {
        refusal.continuation.resume(
            throwing: CourierError.bodyTooLarge(
                limit: refusal.limit,
                announcedLength: refusal.announcedLength,
                request: request,
                response: refusal.response,
                transport: "URLSessionTransport"
            )
        )
        Self.cancelLater(refusal.task)
    }

    /// Cancels `task` from outside the session's delegate queue: FoundationNetworking ignores a `cancel()`
    /// made synchronously inside a data callback (measured with Swift 6.3.1 on Linux).
    private static func cancelLater(_ task: URLSessionTask) {
        URLSessionTaskQueue.queue.async { task.cancel() }
    }
}

/// What ``URLSessionTransportDelegate`` runs a data task for: a buffered call's ``URLSessionExchange`` or a
/// streamed call's ``URLSessionStreamExchange``. Each records its task and caller in its state machine; starting
/// and cancelling are the same for both.
protocol URLSessionTaskExchange: Sendable {
    /// What the caller is resumed with.
    associatedtype Output
    typealias Continuation = CheckedContinuation<Output, any Error>

    /// The machine's `start` transition: records the task and the caller; `false` when the caller was
    /// cancelled already.
    func record(_ task: URLSessionTask, _ continuation: Continuation) -> Bool

    /// The machine's `cancel` transition: the task and the caller, while the caller waits.
    func takeForCancellation() -> (URLSessionTask, Continuation)?
}

extension URLSessionTaskExchange {
    /// Records the task and the continuation; returns `false` (after resuming the continuation with
    /// `CancellationError`) when the caller was cancelled already.
    func start(_ task: URLSessionTask, continuation: Continuation) -> Bool {
        let started = record(task, continuation)
        if !started {
            continuation.resume(throwing: CancellationError())
        }
        return started
    }

    /// The caller was cancelled: resume it with `CancellationError` at once, abort the task's upload and cancel
    /// the task.
    ///
    /// `URLSessionTask.cancel()` waits for FoundationNetworking's work queue, which every session of the process
    /// shares on Linux and on which a body stream is read. An upload whose stream has stalled holds that queue
    /// in its read until the stream is aborted (``UploadBodyStream/abort()``: its read then fails, so the body
    /// is not ended early and sent as a whole one). The task is cancelled from a global queue all the same, not
    /// the calling thread: called on a timeout's timer (which cancels every deadline of its timeout) or on a
    /// thread of the cooperative pool, a wait for the queue would hold up the timer or the pool.
    func cancel() {
        guard let (task, continuation) = takeForCancellation() else { return }
        continuation.resume(throwing: CancellationError())
        UploadBodyStream.abort(of: task)
        URLSessionTaskQueue.queue.async { task.cancel() }
    }
}

/// Where Courier calls FoundationNetworking's task methods that wait for its work queue: `dataTask(with:)`,
/// `resume()` and `cancel()` each run a block synchronously on the work queue that every `URLSession` of the
/// process shares on Linux, and a transfer that holds that queue (an upload whose body stream waits for its next
/// chunk) makes them wait. Made on the cooperative pool, where Swift concurrency has about one thread a core, two
/// such waits stop every task of the process, the timer that would end the stalled upload among them (measured:
/// a stalled upload and two sends deadlocked a test run on this 2-core machine). A serial queue of Courier's own
/// waits instead; FoundationNetworking serializes these calls on its work queue in any case.
enum URLSessionTaskQueue {
    static let queue = DispatchQueue(label: "Courier.URLSessionTasks")

    #if DEBUG
    /// Tests only: called with each request in the task that starts its data task, before the start moves to
    /// ``queue`` (a debug build's seam; release builds have none).
    static let startObserver = LockedState<(@Sendable (URLRequest) -> Void)?>(nil)
    #endif
}

/// The task delegate of a request with a body stream sent over a session that is not a transport's own: it
/// answers only the session's request for the body again (see
/// ``URLSessionTransportDelegate/urlSession(_:task:needNewBodyStream:)``); the completion handler gets the rest.
final class BodyStreamRenewal: NSObject, URLSessionTaskDelegate, Sendable {
    static let shared = BodyStreamRenewal()

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        completionHandler(Replay.renewedBodyStream(for: task.originalRequest))
    }
}
