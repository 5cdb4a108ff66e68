import Foundation

/// Carries one streamed response body from the transport that writes it to the caller that reads it, with
/// backpressure; the transitions are ``ChunkPipeStateMachine``'s, carried out here outside the lock.
///
/// A transport writes with ``yield(_:)`` from a callback (URLSession's delegate: on `pause` it suspends its
/// task until the ``onDemand`` handler runs; AsyncHTTPClient's delegate: it hands the event loop a future that
/// the handler completes; it uses ``buffer(_:)`` and ``flush()`` to wake the reader once for a read's parts)
/// or with ``write(_:)`` from a task (it waits while the buffer is full), and ends with
/// ``finish(error:)``. It learns that the reader is gone through the handler it gives
/// ``onStop(_:)``, and must then stop (cancel its task or connection).
final class ChunkPipe: Sendable {
    // Unsafe continuations: the state machine resumes each exactly once, and a checked one (an allocated
    // canary per wait) cost about 2,000 instructions per chunk of a fast download.
    typealias Consumer = UnsafeContinuation<Data?, any Error>
    typealias Producer = UnsafeContinuation<Void, any Error>
    typealias Machine = ChunkPipeStateMachine<Consumer, Producer>

    /// The default high-water mark: 1 MiB buffered before the transport is paused.
    static let defaultHighWater = 1 << 20

    private struct State {
        var machine: Machine
        var stop: (@Sendable () -> Void)?
        var demand: (@Sendable () -> Void)?
        var endHooks: [@Sendable ((any Error)?) -> Void] = []
        var hasEnded = false
        var endError: (any Error)?
        /// The idle watchdog's clock, as time elapsed since it started, and when the transport last made
        /// progress (a chunk arrived, or the reader let a paused transport go on).
        var elapsed: (@Sendable () -> Duration)?
        var lastProgress: Duration = .zero
        /// The iterators reading the body (each with its copies counts once); see ``removeReader()``.
        var readers = 0
    }

    private let state: LockedState<State>

    init(highWater: Int = ChunkPipe.defaultHighWater) {
        state = LockedState(State(machine: Machine(highWater: highWater)))
    }

    /// A pipe that holds `data` and has ended: a buffered body read as a stream.
    convenience init(finished data: Data) {
        self.init(highWater: max(data.count, 1))
        _ = yield(data)
        finish(error: nil)
    }

    // MARK: Wiring

    /// Sets what stops the transport when the reader's side ends the body early. If the body is over already,
    /// `stop` runs at once (stopping a transport that has finished does nothing).
    func onStop(_ stop: @escaping @Sendable () -> Void) {
        let endedAlready = state.withLock { state -> Bool in
            guard state.machine.isEnded else {
                state.stop = stop
                return false
            }
            return true
        }
        if endedAlready { stop() }
    }

    /// Sets what a sync writer runs to go on after ``yield(_:)`` said `pause`.
    func onDemand(_ demand: @escaping @Sendable () -> Void) {
        state.withLock { $0.demand = demand }
    }

    /// Runs `hook` once when the body is over: read to its end (`nil`), failed (the error), or given up by the
    /// reader (`CancellationError`). If it is over already, `hook` runs at once with how it ended.
    func onEnd(_ hook: @escaping @Sendable ((any Error)?) -> Void) {
        let ended = state.withLock { state -> (any Error)?? in
            if state.hasEnded { return .some(state.endError) }
            state.endHooks.append(hook)
            return .none
        }
        if let ended { hook(ended) }
    }

    // MARK: The writer's side

    /// Whether the body is over for the writer: it should stop.
    var isEnded: Bool { state.withLock { $0.machine.isEnded } }

    /// Hands a chunk to the reader, or buffers it.
    ///
    /// - Returns: `false` when the writer should pause until the ``onDemand(_:)`` handler runs, or stop
    ///   because the body is over (check ``isEnded``).
    @discardableResult
    func yield(_ data: Data) -> Bool {
        let action = progressing { $0.yield(data) }
        switch action {
        case .proceed:
            return true
        case .resumeConsumer(let consumer, let data):
            consumer.resume(returning: data)
            return true
        case .pause, .drop:
            return false
        }
    }

    /// What a writer that batches wake-ups does after ``buffer(_:)``.
    enum Buffered {
        /// Go on writing.
        case proceed
        /// Go on writing, and call ``flush()`` soon (after the chunks arriving together): the reader waits.
        case flushSoon
        /// Pause until the ``onDemand(_:)`` handler runs, or stop because the body is over (check
        /// ``isEnded``). A waiting reader was woken already.
        case pause
    }

    /// Buffers a chunk without waking a waiting reader, so that the chunks of one burst cost the reader one
    /// wake-up: the writer calls ``flush()`` when told to (and before it ends, ``finish(error:)`` flushes).
    func buffer(_ data: Data) -> Buffered {
        let action = progressing { $0.buffer(data) }
        switch action {
        case .proceed:
            return .proceed
        case .scheduleFlush:
            return .flushSoon
        case .resumeConsumer(let consumer, let chunk):
            consumer.resume(returning: chunk)
            return .proceed
        case .pause(let wake):
            if let (consumer, chunk) = wake { consumer.resume(returning: chunk) }
            return .pause
        case .drop:
            return .pause
        }
    }

    /// Wakes a reader that waits while chunks are buffered.
    func flush() {
        guard let flush = state.withLock({ $0.machine.flush() }) else { return }
        deliver(flush)
    }

    /// Runs a writer's event on the machine, under the lock, noting first that the transport made progress
    /// (what the idle timeout measures from).
    private func progressing<Action>(_ event: @Sendable (inout Machine) -> Action) -> Action {
        state.withLock { state in
            if let elapsed = state.elapsed { state.lastProgress = elapsed() }
            return event(&state.machine)
        }
    }

    /// Resumes the reader a flush woke, and the paused writer when the flush drained the buffer enough.
    private func deliver(_ flush: Machine.Flush) {
        wake(flush.demand)
        flush.consumer.resume(returning: flush.chunk)
    }

    /// Hands a chunk to the reader, waiting while the buffer is full.
    ///
    /// - Throws: `CancellationError` when the body is over from the reader's side (stop writing).
    func write(_ data: Data) async throws {
        if yield(data) { return }
        try await withUnsafeThrowingContinuation { (producer: Producer) in
            let waits = state.withLock { $0.machine.waitForDemand(producer) }
            if !waits {
                if isEnded {
                    producer.resume(throwing: CancellationError())
                } else {
                    producer.resume()
                }
            }
        }
    }

    /// Ends the body: cleanly (`error == nil`) or with a transport error, after the chunks already buffered.
    func finish(error: (any Error)?) {
        let (flush, consumer) = state.withLock { state in
            (state.machine.flush(), state.machine.finish(error: error))
        }
        if let flush { deliver(flush) }
        guard let consumer else { return }
        endRead(error, consumer: consumer)
    }

    // MARK: The reader's side

    /// The next chunk, or `nil` at the end.
    ///
    /// Cancelling the reading task ends the body (the transport is stopped) and throws `CancellationError`.
    func next() async throws -> Data? {
        // A cancelled reader stops the body, as a read that waits does (its cancellation handler), even when a
        // chunk is already buffered.
        if Task.isCancelled {
            fail(CancellationError())
            throw CancellationError()
        }
        // Fast path: a buffered chunk or the end, without making a continuation.
        if let ready = takeReady() { return try ready.get() }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (consumer: Consumer) in
                let action = state.withLock { $0.machine.next(consumer: consumer) }
                switch action {
                case .wait:
                    break
                case .chunk(let data, let demand):
                    wake(demand)
                    consumer.resume(returning: data)
                case .end(let error):
                    endRead(error, consumer: consumer)
                }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// Counts a new iterator of the body.
    func addReader() {
        state.withLock { $0.readers += 1 }
    }

    /// Counts an iterator gone (its last copy was dropped: the loop that read it was left, by its end, a
    /// `break`, a `return` or a throw). When it was the last, the body is over for the reader's side, as by
    /// ``fail(_:)`` with `CancellationError`: the transport is stopped at once if it still sends.
    func removeReader() {
        let isLast = state.withLock { state in
            state.readers -= 1
            return state.readers == 0
        }
        if isLast { fail(CancellationError()) }
    }

    /// A chunk or the end when one is ready, without waiting.
    private func takeReady() -> Result<Data?, any Error>? {
        let action = state.withLock { $0.machine.next(consumer: nil) }
        switch action {
        case .wait:
            return nil
        case .chunk(let data, let demand):
            wake(demand)
            return .success(data)
        case .end(let error):
            runEndHooks(error)
            if let error { return .failure(error) }
            return .success(nil)
        }
    }

    /// Resumes a waiting reader with the end, after the end hooks: a reader that sees the end sees what ends
    /// with it (the request counter's in-flight count among them).
    private func endRead(_ error: (any Error)?, consumer: Consumer) {
        runEndHooks(error)
        if let error {
            consumer.resume(throwing: error)
        } else {
            consumer.resume(returning: nil)
        }
    }

    private func wake(_ demand: Machine.Demand?) {
        guard let demand else { return }
        // The transport was paused by the reader, not silent: its idle time starts again now.
        let handler = state.withLock { state in
            if let elapsed = state.elapsed { state.lastProgress = elapsed() }
            return state.demand
        }
        switch demand {
        case .continuation(let producer):
            producer.resume()
        case .handler:
            handler?()
        }
    }

    /// Ends the body from the reader's side: a cancelled read, a timeout, a body given up unread. Buffered
    /// chunks are dropped, a waiting read throws `error`, and the transport is stopped if it still sends.
    func fail(_ error: any Error) {
        let (failure, stop) = state.withLock { state in
            (state.machine.fail(error), state.stop)
        }
        guard let failure else { return }
        if failure.stopsTransport { stop?() }
        // The hooks run before the reader is resumed, as in `endRead`.
        runEndHooks(error)
        failure.consumer?.resume(throwing: error)
        failure.producer?.resume(throwing: CancellationError())
    }

    private func runEndHooks(_ error: (any Error)?) {
        let hooks = state.withLock { state -> [@Sendable ((any Error)?) -> Void] in
            guard !state.hasEnded else { return [] }
            state.hasEnded = true
            state.endError = error
            state.stop = nil
            state.demand = nil
            defer { state.endHooks = [] }
            return state.endHooks
        }
        for hook in hooks { hook(error) }
    }

    // MARK: The idle watchdog

    /// Starts recording when the transport makes progress, on the watchdog's clock.
    func recordProgress(elapsed: @escaping @Sendable () -> Duration) {
        state.withLock { state in
            state.elapsed = elapsed
            state.lastProgress = elapsed()
        }
    }

    /// Bytes waiting for the reader (for tests).
    var bufferedBytes: Int { state.withLock { $0.machine.buffered } }

    /// When the transport last made progress; whether it is paused by backpressure (then it is not idle);
    /// whether the body is over.
    var progress: (last: Duration, isPaused: Bool, ended: Bool) {
        state.withLock { ($0.lastProgress, $0.machine.isPaused, $0.hasEnded || $0.machine.isEnded) }
    }
}
