import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The state of one streamed call through a ``URLSessionTransportDelegate``, as a value: the session's callbacks,
/// the caller's cancellation and the reader's demand go in; what to resume, suspend or cancel comes out.
///
/// `Task` is the data task and `Continuation` the caller's continuation, which waits for the head only; tests use
/// plain values. ``URLSessionStreamExchange`` keeps the machine under its lock and carries out its actions.
///
/// ```
///          start                  the head arrives                 complete
///   idle ─────────► awaitingHead ─────────────────► streaming ─────────────────► finished
///     │ cancel            │ cancel, complete, a response that is not HTTP              ▲
///     └─► cancelledBeforeStart ──── start ──────────┴────────────────────────────────┘
/// ```
///
/// **Reading ahead.** The body's chunks go into a ``ChunkPipe``; when it says to pause (its reader is more
/// than its high-water mark behind), the machine decides what the transport does:
/// - where a data task can be suspended (`canSuspend`, Apple platforms), it is suspended until the reader
///   drains the pipe (``demand()``), so nothing more is read from the socket;
/// - on Linux it cannot be: swift-corelibs-foundation's `suspend()` of a running data task does not stop
///   libcurl, and `resume()` sends the request again (measured with Swift 6.3.1: a 512 MiB body arrived as
///   829 MB from 3 requests after one suspend and resume). So the chunks that arrive while the pipe is over
///   its mark are counted, and once they pass `readAheadLimit` the body is failed and the task cancelled:
///   memory stays bounded, at the price of a reader that falls that far behind losing the body.
struct URLSessionStreamStateMachine<Task, Continuation> {
    private enum Phase {
        case idle
        case cancelledBeforeStart
        /// Sent; `early` holds body bytes delivered before the head, if any.
        case awaitingHead(Task, Continuation, early: Data)
        case streaming(Task)
        case finished
    }

    /// What to do when the head arrives.
    enum HeadAction {
        /// Nothing: the call has ended already.
        case none
        /// Resume the caller with the head; hand it `early` (bytes that came before it) as the first chunk.
        case deliver(Continuation, HTTPURLResponse, early: Data)
        /// The response is not an HTTP response: fail the caller with `nonHTTPResponse` and cancel the task.
        case failNotHTTP(Continuation, Task)
    }

    /// What to do with a chunk once the pipe has taken it (or refused it).
    enum ChunkAction {
        /// Go on.
        case proceed
        /// Suspend the task now (with the exchange's lock held, so that a demand cannot resume it first).
        case suspend(Task)
        /// The reader fell more than `readAheadLimit` behind: fail the body with `bodyTooLarge` and cancel the
        /// task.
        case overrun(Task, limit: Int)
    }

    /// How the task's end ends the call.
    enum Completion {
        /// It had ended already.
        case none
        /// Before the head: fail the caller.
        case fail(Continuation, any Error)
        /// Before the head, without an error (a challenge answered by the delegate on Linux): resume the caller
        /// with `response` and a body that is `data` whole.
        case deliverWhole(Continuation, HTTPURLResponse, Data)
        /// Before the head, without an error and without an HTTP response.
        case failNotHTTP(Continuation)
        /// After the head: end the body, cleanly (`nil`) or with the error.
        case finishBody((any Error)?)
    }

    /// Whether a running data task can be suspended to stop reading (not on Linux).
    let canSuspend: Bool
    /// On Linux, the most bytes that may arrive while the reader is behind before the body is failed.
    let readAheadLimit: Int
    private var phase = Phase.idle
    /// Bytes that arrived since the pipe last said to pause (Linux).
    private var readAhead = 0
    private var isSuspended = false
    /// The reader asked for more before the task was suspended: do not suspend it.
    private var demandPending = false

    init(canSuspend: Bool, readAheadLimit: Int) {
        self.canSuspend = canSuspend
        self.readAheadLimit = readAheadLimit
    }

    // MARK: The caller's side

    /// The task was made and the caller waits for the head.
    ///
    /// - Returns: `true` to resume the task; `false` when the caller was cancelled already: resume it with
    ///   `CancellationError` and cancel the task instead.
    mutating func start(_ task: Task, continuation: Continuation) -> Bool {
        guard case .idle = phase else {
            phase = .finished
            return false
        }
        phase = .awaitingHead(task, continuation, early: Data())
        return true
    }

    /// The caller was cancelled while waiting for the head.
    ///
    /// - Returns: The continuation to resume with `CancellationError` and the task to cancel; `nil` once the
    ///   head has been delivered (then the body's reader stops the task).
    mutating func cancel() -> (Task, Continuation)? {
        if case .idle = phase {
            phase = .cancelledBeforeStart
            return nil
        }
        guard case .awaitingHead(let task, let continuation, _) = phase else { return nil }
        phase = .finished
        return (task, continuation)
    }

    /// The body's reader stopped (left its loop, was cancelled, timed out, dropped the body).
    ///
    /// - Returns: The task to cancel, if it still runs.
    mutating func stop() -> Task? {
        guard case .streaming(let task) = phase else { return nil }
        phase = .finished
        return task
    }

    // MARK: The session's side

    /// The response head arrived.
    mutating func receive(_ response: URLResponse) -> HeadAction {
        guard case .awaitingHead(let task, let continuation, let early) = phase else { return .none }
        guard let http = response as? HTTPURLResponse else {
            phase = .finished
            return .failNotHTTP(continuation, task)
        }
        // An interim response (103 Early Hints, 102 Processing) is not the answer: FoundationNetworking reports
        // each head it reads, and the final one follows (RFC 9110 §15.2). A 101 ends the exchange as HTTP.
        if ResponseHeadCheck.isInterim(http.statusCode) { return .none }
        phase = .streaming(task)
        return .deliver(continuation, http, early: early)
    }

    /// The head arrived, but the transport refuses it (a field value with a control character, too many
    /// fields): the call ends before the head is delivered.
    ///
    /// - Returns: The task to cancel and the continuation to resume with the transport's error; `nil` when the
    ///   call is not waiting for its head.
    mutating func refuseHead() -> (Task, Continuation)? {
        guard case .awaitingHead(let task, let continuation, _) = phase else { return nil }
        phase = .finished
        return (task, continuation)
    }

    /// A chunk of the body arrived.
    ///
    /// - Returns: `true` when the body is streaming: hand the chunk to the pipe (and, when it says to pause,
    ///   call ``paused(after:)``). Before the head the chunk is kept, to be the body's first.
    mutating func receive(_ data: Data) -> Bool {
        switch phase {
        case .awaitingHead(let task, let continuation, var early):
            // Out of the enum while appending, so that the bytes are not copied.
            phase = .finished
            early.append(data)
            phase = .awaitingHead(task, continuation, early: early)
            return false
        case .streaming:
            return true
        case .idle, .cancelledBeforeStart, .finished:
            return false
        }
    }

    /// The pipe took a chunk of `count` bytes and said to pause: its reader is behind.
    mutating func paused(after count: Int) -> ChunkAction {
        guard case .streaming(let task) = phase else { return .proceed }
        if canSuspend {
            if demandPending {
                demandPending = false
                return .proceed
            }
            guard !isSuspended else { return .proceed }
            isSuspended = true
            return .suspend(task)
        }
        readAhead += count
        guard readAhead > readAheadLimit else { return .proceed }
        phase = .finished
        return .overrun(task, limit: readAheadLimit)
    }

    /// The reader drained the pipe to half its mark.
    ///
    /// - Returns: The task to resume, when it was suspended.
    mutating func demand() -> Task? {
        readAhead = 0
        guard case .streaming(let task) = phase, canSuspend else { return nil }
        guard isSuspended else {
            demandPending = true
            return nil
        }
        isSuspended = false
        return task
    }

    /// The task ended: with `error`, or else cleanly (`fallbackResponse` is the head when the session delivered
    /// none, as for a challenge on Linux).
    mutating func complete(error: (any Error)?, fallbackResponse: URLResponse?) -> Completion {
        switch phase {
        case .awaitingHead(_, let continuation, let early):
            phase = .finished
            if let error { return .fail(continuation, error) }
            guard let response = fallbackResponse as? HTTPURLResponse else { return .failNotHTTP(continuation) }
            return .deliverWhole(continuation, response, early)
        case .streaming:
            phase = .finished
            return .finishBody(error)
        case .idle, .cancelledBeforeStart, .finished:
            return .none
        }
    }
}
