/// The state of one body that ``AsyncHTTPClientTransport`` streams through AsyncHTTPClient's delegate API, as a
/// value: events go in (from the caller's task, the event loop, the body's reader), what to resume, cancel or
/// complete comes out, to be done outside the lock.
///
/// `Continuation` is the caller's wait for the head, `Task` AsyncHTTPClient's request, `Timer` the head's
/// deadline timer and `Promise` the future a paused body waits on (tests use plain values).
///
/// ```
///          waiting        head                     finished, failed, stopped
///   idle ──────────► waitingForHead ──────────► streaming ─────────────────────────► ended
///     │ cancelled           │   cancelled, head deadline passed, failed                ▲
///     └─────────────────────┴──────────────────────────────────────────────────────────┘
/// ```
///
/// **The head.** The caller waits until the head arrives, the request fails, the caller is cancelled, or the
/// call's deadline passes; whichever comes first resumes it, once. The request and the timer are known only
/// after the wait started, so a wait that ended before cancels them as soon as they are.
///
/// **Backpressure.** The body's chunks go into a ``ChunkPipe`` from the event loop. When the pipe says pause,
/// AsyncHTTPClient is given a promise's future to wait on, and the pipe's demand completes it; a demand that
/// comes between the two is kept, so the body goes on at once. Every promise kept is handed back to be
/// completed when the body ends, however it ends: a promise left pending is a leak to SwiftNIO.
struct AsyncHTTPClientStreamStateMachine<Continuation, Task, Timer, Promise> {
    private enum Phase {
        case idle
        case waitingForHead(Continuation)
        case streaming
        case ended
    }

    private var phase = Phase.idle
    private var task: Task?
    private var timer: Timer?
    private var pendingDemand: Promise?
    private var hasDemand = false

    init() {}

    /// Whether the body streams into the pipe (the head was delivered and the body is not over).
    var isStreaming: Bool {
        if case .streaming = phase { return true }
        return false
    }

    // MARK: Starting

    /// The caller starts waiting for the head.
    ///
    /// - Returns: `false` when the caller was cancelled already: resume it with the cancellation and send
    ///   nothing.
    mutating func waiting(_ continuation: Continuation) -> Bool {
        guard case .idle = phase else { return false }
        phase = .waitingForHead(continuation)
        return true
    }

    /// AsyncHTTPClient took the request.
    ///
    /// - Returns: The request, to cancel when the wait for the head ended without the head (the caller was
    ///   cancelled, or the deadline passed, before the request was known; cancelling a request that failed or
    ///   finished does nothing).
    mutating func started(_ task: Task) -> Task? {
        switch phase {
        case .waitingForHead:
            self.task = task
            return nil
        case .idle, .streaming:
            // The head came first; from now on the body's reader stops the request.
            return nil
        case .ended:
            return task
        }
    }

    /// The head's deadline timer is set.
    ///
    /// - Returns: The timer, to cancel when the wait for the head is over already.
    mutating func timerSet(_ timer: Timer) -> Timer? {
        guard case .waitingForHead = phase else { return timer }
        self.timer = timer
        return nil
    }

    // MARK: The head

    /// What ends the wait for the head other than the head itself.
    struct HeadFailure {
        /// The caller, to resume with the error.
        var continuation: Continuation
        /// The request, to cancel (`nil`: not known yet, or it failed by itself).
        var task: Task?
        /// The deadline timer, to cancel.
        var timer: Timer?
    }

    /// The head arrived.
    ///
    /// - Returns: The caller, to resume with the body, and the timer to cancel; `nil` when the wait is over
    ///   already (the request is being cancelled).
    mutating func receivedHead() -> (continuation: Continuation, timer: Timer?)? {
        guard case .waitingForHead(let continuation) = phase else { return nil }
        phase = .streaming
        defer { forgetHeadWait() }
        return (continuation, timer)
    }

    /// The caller's task was cancelled. Once the head is delivered, the body's reader stops the body instead.
    mutating func cancelled() -> HeadFailure? {
        endHeadWait()
    }

    /// The call's deadline passed (the timer fired).
    mutating func deadlinePassed() -> HeadFailure? {
        endHeadWait()
    }

    /// The head arrived, but the transport refuses it (more header fields than Courier accepts): the wait ends
    /// with an error, as for a passed deadline, and the request is cancelled.
    mutating func headRefused() -> HeadFailure? {
        endHeadWait()
    }

    private mutating func endHeadWait() -> HeadFailure? {
        if case .idle = phase {
            // Cancelled before the wait started: ``waiting(_:)`` tells the caller.
            phase = .ended
            return nil
        }
        guard case .waitingForHead(let continuation) = phase else { return nil }
        phase = .ended
        defer { forgetHeadWait() }
        return HeadFailure(continuation: continuation, task: task, timer: timer)
    }

    private mutating func forgetHeadWait() {
        task = nil
        timer = nil
    }

    // MARK: The end

    /// What the request's end asks for.
    enum EndAction {
        /// Resume the caller with the error (translated for the head); cancel the timer.
        case failHead(Continuation, timer: Timer?)
        /// End the pipe (with the error, if any); complete the promise AsyncHTTPClient waits on, if any.
        case finishBody(pendingDemand: Promise?)
        /// The request ended after the wait for the head or the body was over: nothing to do.
        case none
    }

    /// The body arrived whole.
    mutating func finished() -> EndAction {
        end()
    }

    /// The request failed.
    mutating func failed() -> EndAction {
        end()
    }

    private mutating func end() -> EndAction {
        switch phase {
        case .waitingForHead(let continuation):
            phase = .ended
            defer { forgetHeadWait() }
            return .failHead(continuation, timer: timer)
        case .streaming:
            phase = .ended
            return .finishBody(pendingDemand: takeDemand())
        case .idle, .ended:
            return .none
        }
    }

    /// The body's reader stopped it (it left its loop, was cancelled, dropped the body, timed out).
    ///
    /// - Returns: The promise AsyncHTTPClient waits on, to complete after cancelling the request.
    mutating func stopped() -> Promise? {
        guard case .streaming = phase else { return nil }
        phase = .ended
        return takeDemand()
    }

    // MARK: Backpressure

    /// The pipe said pause; `promise`'s future is what AsyncHTTPClient would wait on.
    ///
    /// - Returns: `true` when AsyncHTTPClient should wait on the promise (it is kept); `false` when it should
    ///   go on: the reader asked for more already, or the body is over (the request is being cancelled).
    mutating func paused(_ promise: Promise) -> Bool {
        guard case .streaming = phase else { return false }
        if hasDemand {
            hasDemand = false
            return false
        }
        pendingDemand = promise
        return true
    }

    /// The reader brought the pipe's buffer down: AsyncHTTPClient may go on.
    ///
    /// - Returns: The promise it waits on, to complete; `nil` when it is not waiting yet (the demand is kept
    ///   for the pause on its way) or the body is over.
    mutating func demanded() -> Promise? {
        guard case .streaming = phase else { return nil }
        if let promise = takeDemand() { return promise }
        hasDemand = true
        return nil
    }

    private mutating func takeDemand() -> Promise? {
        defer { pendingDemand = nil }
        return pendingDemand
    }
}
