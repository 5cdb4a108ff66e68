import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The state of one ``URLSessionExchange``, as a value: the session's callbacks and the caller's cancellation go
/// in, what to resume or cancel comes out.
///
/// `Task` is the data task and `Continuation` the caller's continuation; tests use plain values. The exchange
/// keeps the machine under its lock, and resumes, cancels and builds errors outside it.
///
/// ```
///          start                      complete, cancel, or a body over the limit
///   idle ─────────► running(task, c) ─────────────────────────────────────────► finished
///     │ cancel                                                                      ▲
///     └──────────► cancelledBeforeStart ─────────── start (resumes c cancelled) ────┘
/// ```
///
/// Exactly one event resumes the continuation: the first of the completion, the caller's cancellation, and the
/// refusal of a body larger than the limit. Every later event finds the exchange finished and does nothing.
struct URLSessionExchangeStateMachine<Task, Continuation> {
    private enum Phase {
        case idle
        case running(Task, Continuation)
        case cancelledBeforeStart
        case finished
    }

    /// A body refused for being larger than the limit: resume the continuation with `bodyTooLarge` and cancel
    /// the task.
    struct Refusal {
        let task: Task
        let continuation: Continuation
        let limit: Int
        /// The `Content-Length` that exceeded the limit, when it was announced rather than received.
        let announcedLength: Int64?
        let response: HTTPURLResponse?
    }

    /// How the exchange ended, when ``complete(error:fallbackResponse:)`` ended it.
    enum Completion {
        /// It had already ended: nothing to do.
        case none
        case succeed(Continuation, Data, HTTPURLResponse)
        case fail(Continuation, any Error)
        /// The response is not an HTTP response: fail with `nonHTTPResponse`.
        case failNotHTTP(Continuation)
    }

    /// The request's method, for the `HEAD` exception of the announced-length check.
    let method: String?
    private var phase = Phase.idle
    private var response: URLResponse?
    private var body: ResponseBodyAccumulator

    init(method: String?, limit: Int) {
        self.method = method
        self.body = ResponseBodyAccumulator(limit: limit)
    }

    /// Whether the exchange has ended (its continuation resumed, or never to be).
    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    // MARK: Events

    /// The task was made and the continuation is waiting.
    ///
    /// - Returns: `true` to resume the task; `false` when the caller was cancelled already: resume the
    ///   continuation with `CancellationError` and cancel the task instead.
    mutating func start(_ task: Task, continuation: Continuation) -> Bool {
        guard case .idle = phase else {
            phase = .finished
            return false
        }
        phase = .running(task, continuation)
        return true
    }

    /// The caller was cancelled.
    ///
    /// - Returns: While running, the continuation to resume with `CancellationError` and the task to cancel; the
    ///   body collected so far is dropped.
    mutating func cancel() -> (Task, Continuation)? {
        switch phase {
        case .idle:
            phase = .cancelledBeforeStart
            return nil
        case .running(let task, let continuation):
            phase = .finished
            body = ResponseBodyAccumulator(limit: body.limit)
            return (task, continuation)
        case .cancelledBeforeStart, .finished:
            return nil
        }
    }

    /// The response head arrived.
    ///
    /// - Returns: A refusal when its `Content-Length` already exceeds the limit.
    mutating func receive(_ response: URLResponse) -> Refusal? {
        guard case .running(let task, let continuation) = phase else { return nil }
        let http = response as? HTTPURLResponse
        // An interim response (103 Early Hints) is not the answer; the final one follows.
        if let http, ResponseHeadCheck.isInterim(http.statusCode) { return nil }
        self.response = response
        let expected = response.expectedContentLength
        if ResponseBodyAccumulator.announcedLengthExceeds(
            body.limit,
            expectedContentLength: expected,
            method: method,
            status: http?.statusCode ?? 200
        ) {
            return refuse(task, continuation, announcedLength: expected)
        }
        body.reserve(expectedContentLength: expected)
        return nil
    }

    /// The head arrived, but the transport refuses it (a field value with a control character, too many
    /// fields): the exchange ends.
    ///
    /// - Returns: While running, the task to cancel and the continuation to resume with the transport's error.
    mutating func refuseHead() -> (Task, Continuation)? {
        guard case .running(let task, let continuation) = phase else { return nil }
        phase = .finished
        return (task, continuation)
    }

    /// A chunk of the body arrived.
    ///
    /// - Returns: A refusal when the body is now larger than the limit.
    mutating func receive(_ data: Data) -> Refusal? {
        guard case .running(let task, let continuation) = phase else { return nil }
        guard !body.append(data) else { return nil }
        return refuse(task, continuation, announcedLength: nil)
    }

    /// Ends the exchange with a refusal of the body: too large by its `Content-Length` (`announcedLength`) or
    /// by the bytes received.
    private mutating func refuse(
        _ task: Task,
        _ continuation: Continuation,
        announcedLength: Int64?
    ) -> Refusal {
        phase = .finished
        return Refusal(
            task: task,
            continuation: continuation,
            limit: body.limit,
            announcedLength: announcedLength,
            response: response as? HTTPURLResponse
        )
    }

    /// The task ended: with `error`, or else with the response received (`fallbackResponse` when none was, as
    /// for a challenge issued before the response was delivered) and the body collected.
    mutating func complete(error: (any Error)?, fallbackResponse: URLResponse?) -> Completion {
        guard case .running(_, let continuation) = phase else { return .none }
        phase = .finished
        if let error { return .fail(continuation, error) }
        guard let response = (response ?? fallbackResponse) as? HTTPURLResponse else {
            return .failNotHTTP(continuation)
        }
        let data = body.data
        body = ResponseBodyAccumulator(limit: body.limit)
        return .succeed(continuation, data, response)
    }
}
