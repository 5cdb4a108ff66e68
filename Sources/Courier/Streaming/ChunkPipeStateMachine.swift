import Foundation

/// The state of one streamed response body between the transport that writes its chunks and the caller that
/// reads them, as a value: events go in, what to resume or tell the transport comes out.
///
/// `Consumer` is the reader's continuation and `Producer` the writer's (tests use plain values); ``ChunkPipe``
/// keeps the machine under its lock and resumes continuations outside it.
///
/// ```
///            yield / next                       finish (buffer drained)
///   open ─────────────────────► open ──────────────────────────────────► ended
///     │  cancel, fail (the reader's side: a cancelled read, an idle timeout, a dropped body)  ▲
///     └──────────────────────────────────────────────────────────────────────────────────────┘
/// ```
///
/// **Backpressure.** Chunks are buffered until the reader takes them. Once more than `highWater` bytes wait,
/// ``yield(_:)`` says `pause` (a URLSession task is suspended, AsyncHTTPClient waits on a future, a pumping task
/// waits), and the writer is told to go on when the reader has brought the buffer down to half of it. So at
/// most `highWater` plus one chunk is held, however slow the reader.
///
/// **Ending.** The writer ends the body with ``finish(error:)``: the reader gets the chunks still buffered,
/// then the end or the error. The reader's side ends it with ``fail(_:)`` (a cancelled read, an idle
/// timeout, a body dropped unread): the buffer is dropped, a waiting reader gets the error, and the transport
/// is told to stop. Every event after the end does nothing, so each continuation is resumed exactly once.
struct ChunkPipeStateMachine<Consumer, Producer> {
    private enum Phase {
        case open
        /// The writer finished; the reader may still have buffered chunks to take.
        case finishing((any Error)?)
        /// Over: the end was read, or the reader's side failed the body.
        case ended((any Error)?)
    }

    /// What the writer should do after ``yield(_:)``.
    enum YieldAction {
        /// Go on writing.
        case proceed
        /// Resume the waiting reader with this chunk, and go on.
        case resumeConsumer(Consumer, Data)
        /// Stop writing until the reader asks for more (a URLSession task is suspended).
        case pause
        /// The body is over (the reader's side failed it): drop the chunk and stop.
        case drop
    }

    /// What the writer should do after ``buffer(_:)``.
    enum BufferAction {
        /// Go on writing.
        case proceed
        /// Go on writing, and arrange for ``flush()`` to run soon: the reader waits and no flush is arranged.
        case scheduleFlush
        /// Resume the waiting reader with this chunk now (the buffer passed its high-water mark), and go on.
        case resumeConsumer(Consumer, Data)
        /// Stop writing until the reader asks for more; resume the waiting reader with its chunk first, if
        /// one is given, so that it drains the buffer.
        case pause(wake: (Consumer, Data)?)
        /// The body is over (the reader's side failed it): drop the chunk and stop.
        case drop
    }

    /// A waiting reader to resume with a chunk, and how to tell a paused writer to go on, if it is.
    struct Flush {
        var consumer: Consumer
        var chunk: Data
        var demand: Demand?
    }

    /// What ``next(consumer:)`` decided.
    enum NextAction {
        /// A chunk is ready; when `resumeProducer` is set, tell the writer to go on too.
        case chunk(Data, resumeProducer: Demand?)
        /// The body ended; `nil` is a clean end.
        case end((any Error)?)
        /// Nothing yet: the reader waits (its continuation is kept).
        case wait
    }

    /// How to tell a paused writer to go on: resume its continuation, or (a sync writer) call its handler.
    enum Demand {
        case continuation(Producer)
        case handler
    }

    /// What ending the body from the reader's side asks for.
    struct Failure {
        /// The waiting reader, to resume with the error.
        var consumer: Consumer?
        /// The paused writer's continuation, to resume with the error.
        var producer: Producer?
        /// Whether the transport is still sending and must be told to stop.
        var stopsTransport: Bool
    }

    let highWater: Int
    private var phase = Phase.open
    private var chunks: [Data] = []
    private var head = 0
    private var bufferedBytes = 0
    private var consumer: Consumer?
    private var producer: Producer?
    /// Whether ``buffer(_:)`` asked for a ``flush()`` that has not run yet.
    private var flushPending = false
    /// Whether the writer was told to pause and has not been told to go on.
    private(set) var isPaused = false

    init(highWater: Int) {
        precondition(highWater > 0, "the buffer must hold at least one byte")
        self.highWater = highWater
    }

    /// Whether the reader is waiting for a chunk now.
    var isReaderWaiting: Bool { consumer != nil }

    /// Whether the body is over for the writer (it should stop writing).
    var isEnded: Bool {
        if case .open = phase { return false }
        return true
    }

    /// Bytes waiting for the reader.
    var buffered: Int { bufferedBytes }

    // MARK: The writer's side

    /// A chunk arrived from the transport.
    mutating func yield(_ data: Data) -> YieldAction {
        guard case .open = phase else { return .drop }
        if let consumer {
            self.consumer = nil
            return .resumeConsumer(consumer, data)
        }
        guard !data.isEmpty else { return .proceed }
        chunks.append(data)
        bufferedBytes += data.count
        guard bufferedBytes > highWater else { return .proceed }
        isPaused = true
        return .pause
    }

    /// A chunk arrived from a writer that batches wake-ups: it is buffered even when the reader waits, and the
    /// reader is resumed by ``flush()``, once for every chunk buffered until then.
    ///
    /// A reader that waits while chunks are buffered is always resumed: ``buffer(_:)`` asks for a flush the
    /// first time it buffers for a waiting reader, and past the high-water mark it hands the reader a chunk at
    /// once (a writer must never pause with its reader asleep).
    mutating func buffer(_ data: Data) -> BufferAction {
        guard case .open = phase else { return .drop }
        if !data.isEmpty {
            chunks.append(data)
            bufferedBytes += data.count
        }
        if bufferedBytes > highWater {
            var wake: (Consumer, Data)?
            if let consumer {
                self.consumer = nil
                wake = (consumer, takeChunk())
            }
            if bufferedBytes > highWater {
                isPaused = true
                return .pause(wake: wake)
            }
            if let wake { return .resumeConsumer(wake.0, wake.1) }
        }
        guard consumer != nil, head < chunks.count, !flushPending else { return .proceed }
        flushPending = true
        return .scheduleFlush
    }

    /// Wakes a reader waiting while chunks are buffered (the flush ``buffer(_:)`` asked for).
    ///
    /// - Returns: The reader and its chunk, `nil` when no reader waits or nothing is buffered.
    mutating func flush() -> Flush? {
        flushPending = false
        guard let consumer, head < chunks.count else { return nil }
        self.consumer = nil
        let chunk = takeChunk()
        return Flush(consumer: consumer, chunk: chunk, demand: takeDemandIfDrained())
    }

    private mutating func takeChunk() -> Data {
        let chunk = chunks[head]
        head += 1
        bufferedBytes -= chunk.count
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        }
        return chunk
    }

    /// An async writer was told to pause and waits with `producer` until the reader asks for more.
    ///
    /// - Returns: `false` when it must not wait: the reader already asked for more, or the body is over.
    mutating func waitForDemand(_ producer: Producer) -> Bool {
        guard case .open = phase, isPaused else { return false }
        self.producer = producer
        return true
    }

    /// The transport finished the body, cleanly (`nil`) or with an error.
    ///
    /// A writer that batches wake-ups calls ``flush()`` first, so that a waiting reader has its chunks.
    ///
    /// - Returns: The waiting reader to resume with the end, if it was waiting and nothing is buffered.
    mutating func finish(error: (any Error)?) -> Consumer? {
        guard case .open = phase else { return nil }
        if let consumer, head == chunks.count {
            self.consumer = nil
            phase = .ended(error)
            return consumer
        }
        phase = .finishing(error)
        return nil
    }

    // MARK: The reader's side

    /// The reader asks for the next chunk; `consumer` is kept if it has to wait (with `nil`, nothing is kept
    /// and `wait` only says that nothing is ready).
    mutating func next(consumer: Consumer?) -> NextAction {
        if head < chunks.count {
            let chunk = takeChunk()
            return .chunk(chunk, resumeProducer: takeDemandIfDrained())
        }
        switch phase {
        case .open:
            guard let consumer else { return .wait }
            self.consumer = consumer
            return .wait
        case .finishing(let error):
            phase = .ended(nil)
            return .end(error)
        case .ended(let error):
            // Reading again after the end: a clean end stays clean; a failure is reported again.
            return .end(error)
        }
    }

    /// When the writer is paused and the buffer is down to half the high-water mark, how to wake it.
    private mutating func takeDemandIfDrained() -> Demand? {
        guard isPaused, bufferedBytes <= highWater / 2 else { return nil }
        isPaused = false
        if let producer {
            self.producer = nil
            return .continuation(producer)
        }
        return .handler
    }

    /// Ends the body from the reader's side with `error`: a cancelled read, an idle timeout, a dropped body.
    ///
    /// - Returns: What to resume and whether to stop the transport, or `nil` when the body was already over.
    mutating func fail(_ error: any Error) -> Failure? {
        let stopsTransport: Bool
        switch phase {
        case .open:
            stopsTransport = true
        case .finishing:
            stopsTransport = false
        case .ended:
            return nil
        }
        phase = .ended(error)
        chunks.removeAll()
        head = 0
        bufferedBytes = 0
        isPaused = false
        defer {
            consumer = nil
            producer = nil
        }
        return Failure(consumer: consumer, producer: producer, stopsTransport: stopsTransport)
    }
}
