import Dispatch
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One streamed call through a ``URLSessionTransportDelegate``: the caller waits for the head only, and the body's
/// chunks go into a ``ChunkPipe`` as the session delivers them. The transitions are
/// ``URLSessionStreamStateMachine``'s; this type carries them out (resuming, suspending, cancelling) outside its
/// lock, but for suspending, which must not be overtaken by the resume of a reader's demand.
final class URLSessionStreamExchange: URLSessionTaskExchange {
    typealias Continuation = CheckedContinuation<(StreamedBody, HTTPURLResponse), any Error>
    private typealias Machine = URLSessionStreamStateMachine<URLSessionTask, Continuation>

    /// Whether a running data task can be suspended to stop it reading: not with swift-corelibs-foundation,
    /// whose `resume()` sends the request again.
    #if canImport(FoundationNetworking)
    static let canSuspend = false
    #else
    static let canSuspend = true
    #endif

    private let request: URLRequest
    private let pipe = ChunkPipe()
    private let state: LockedState<Machine>

    init(request: URLRequest, readAheadLimit: Int) {
        self.request = request
        self.state = LockedState(Machine(canSuspend: Self.canSuspend, readAheadLimit: readAheadLimit))
    }

    func record(_ task: URLSessionTask, _ continuation: Continuation) -> Bool {
        state.withLock { $0.start(task, continuation: continuation) }
    }

    /// Only before the head: after it, the body's reader stops the task.
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
        switch state.withLock({ $0.receive(response) }) {
        case .none:
            break
        case .deliver(let continuation, let response, let early):
            wire()
            if !early.isEmpty { receiveStreaming(early) }
            continuation.resume(returning: (StreamedBody(pipe: pipe), response))
        case .failNotHTTP(let continuation, let task):
            continuation.resume(throwing: notHTTP())
            Self.cancelLater(task)
        }
    }

    /// Connects the pipe's reader to the task: a demand resumes a suspended task, a reader that stops cancels it.
    private func wire() {
        // On ``URLSessionTaskQueue``: a reader's demand and stop come from its task, on the cooperative pool, and
        // `resume()` and `cancel()` wait for FoundationNetworking's work queue.
        pipe.onDemand { [state] in
            guard let task = state.withLock({ $0.demand() }) else { return }
            URLSessionTaskQueue.queue.async { task.resume() }
        }
        pipe.onStop { [state] in
            // The task, if it still runs: cancelling it closes the connection.
            guard let task = state.withLock({ $0.stop() }) else { return }
            URLSessionTaskQueue.queue.async { task.cancel() }
        }
    }

    func receive(_ data: Data) {
        guard state.withLock({ $0.receive(data) }) else { return }
        receiveStreaming(data)
    }

    private func receiveStreaming(_ data: Data) {
        if pipe.yield(data) || pipe.isEnded { return }
        let action = state.withLock { machine in
            let action = machine.paused(after: data.count)
            // Under the lock: a demand that comes in now must find the task suspended, to resume it.
            if case .suspend(let task) = action { task.suspend() }
            return action
        }
        guard case .overrun(let task, let limit) = action else { return }
        pipe.finish(
            error: CourierError(
                .bodyTooLarge,
                message: "the reader of the streamed response body fell more than \(limit) bytes behind; "
                    + "URLSession on Linux cannot pause a transfer, so URLSessionTransport holds at most "
                    + "maximumResponseSize unread bytes (AsyncHTTPClientTransport waits for the reader instead)",
                request: request
            )
        )
        Self.cancelLater(task)
    }

    /// Ends the call: with `error`, or else cleanly (`fallbackResponse` is the head when none was delivered, as
    /// for a challenge on Linux).
    func complete(error: (any Error)?, fallbackResponse: URLResponse? = nil) {
        switch state.withLock({ $0.complete(error: error, fallbackResponse: fallbackResponse) }) {
        case .none:
            break
        case .fail(let continuation, let error):
            continuation.resume(throwing: Self.describing(error, request: request))
        case .deliverWhole(let continuation, let response, let data):
            // A head that came with a challenge (Linux) may not have been through `receive(_:)`.
            if fallbackResponse != nil, let problem = ResponseHeadCheck.problem(with: response, request: request) {
                continuation.resume(throwing: problem)
            } else {
                continuation.resume(returning: (StreamedBody(data), response))
            }
        case .failNotHTTP(let continuation):
            continuation.resume(throwing: notHTTP())
        case .finishBody(let error):
            pipe.finish(error: error.map { Self.bodyFailure($0, request: request) })
        }
    }

    private func notHTTP() -> CourierError {
        CourierError(.nonHTTPResponse, message: "the response is not an HTTP response", request: request)
    }

    /// A session's `URLError` as ``URLSessionTransport`` reports it.
    private static func describing(_ error: any Error, request: URLRequest) -> any Error {
        guard let error = error as? URLError else { return error }
        return TransportFailure.describing(error, request: request)
    }

    /// What the loop over the body throws when the task fails after the head: a cancellation as it is (the
    /// client reports it as `CancellationError`), a connection failure in words, anything else (curl's
    /// "transfer closed with bytes remaining" is an unknown `URLError` on Linux) as a lost connection.
    private static func bodyFailure(_ error: any Error, request: URLRequest) -> any Error {
        if let urlError = error as? URLError, urlError.code == .cancelled { return error }
        let described = describing(error, request: request)
        if described is CourierError || described is CancellationError { return described }
        return TransportFailure.lostDuringBody(error, request: request)
    }

    /// Cancels `task` from outside the session's delegate queue: FoundationNetworking ignores a `cancel()`
    /// made synchronously inside a data callback.
    private static func cancelLater(_ task: URLSessionTask) {
        URLSessionTaskQueue.queue.async { task.cancel() }
    }
}
