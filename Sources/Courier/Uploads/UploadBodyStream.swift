import Dispatch
package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `httpBodyStream` of a request whose body is a file, a stream factory or a multipart form: an
/// `InputStream` that carries the recipe of its bytes (``UploadSource``), so that every layer of the chain
/// still sees a plain `URLRequest`.
///
/// - ``Replay`` recognises it and gives every re-send (retry, the restart after a token refresh, a
///   `307`/`308`, a hedged attempt) an instance of its own, made with ``fresh()``.
/// - AsyncHTTPClientTransport reads ``source`` natively (``UploadChunks``), with the length when it is known.
/// - URLSession reads it as an `InputStream`, synchronously, on its own thread.
///
/// Each `open()` starts a new pass from the first byte, so a middleware that reads the stream to the end
/// (to sign the body, say) leaves the transport a whole body to send. One instance is read by one reader
/// at a time; concurrent sends each get their own instance from ``Replay``.
package final class UploadBodyStream: InputStream {
    // Not Sendable, like every `InputStream`; its state is behind a lock all the same (`pass`), because
    // URLSession reads it on its own thread while the request's owner may close or drop it.

    /// The recipe of the bytes.
    package let source: UploadSource
    private let pass: LockedState<Pass>

    /// One reading of the body, from `open()` to `close()`.
    struct Pass {
        enum Reader {
            case segments(SegmentReader)
            case pump(ChunkPump, leftover: Data)
            /// The pump's sequence has ended: the next read finishes the body.
            case ended
        }

        var status: Stream.Status = .notOpen
        var reader: Reader?
        /// Set by ``UploadBodyStream/abort()``: every reading from then on, even one opened later, fails.
        var aborted = false
        /// The stream a session was given to send the body again (``UploadBodyStream/renewed()``), which an abort
        /// reaches too.
        var renewal: Renewal?
        var counter: UploadCounter
        var error: (any Error)?
    }

    init(_ source: UploadSource) {
        self.source = source
        pass = LockedState(Pass(counter: UploadCounter(source)))
        super.init(data: Data())
    }

    deinit {
        pass.withLock { $0.end(.closed) }
    }

    /// Another stream over the same bytes, for another send.
    func fresh() -> UploadBodyStream { UploadBodyStream(source) }

    /// Another stream over the same bytes for the session sending this stream's request to send it again by itself
    /// (``Replay/renewedBodyStream(for:)``): kept, so that aborting this stream (its exchange ended) aborts the one
    /// the session reads now; aborted at once when this one already was.
    func renewed() -> UploadBodyStream {
        let next = Renewal(stream: fresh())
        let aborted = pass.withLock { pass in
            pass.renewal = next
            return pass.aborted
        }
        if aborted { next.stream.abort() }
        return next.stream
    }

    /// A renewal, held by the stream it renews. `@unchecked Sendable`: a stream's state is behind its own lock, and
    /// only ``abort()`` is called on it from here.
    struct Renewal: @unchecked Sendable {
        let stream: UploadBodyStream
    }

    package override func open() {
        pass.withLock { pass in
            pass.end(.notOpen)
            // Aborted before its reader opened it (a deadline that passed before URLSession started the upload).
            if pass.aborted {
                pass.error = CancellationError()
                pass.status = .error
                return
            }
            pass.counter = UploadCounter(source)
            switch source.origin {
            case .segments(let segments):
                pass.reader = .segments(SegmentReader(segments))
            case .stream(let make):
                pass.reader = .pump(ChunkPump(make), leftover: Data())
            }
            pass.status = .open
        }
    }

    package override func close() {
        pass.withLock { $0.end(.closed) }
    }

    package override var streamStatus: Stream.Status { pass.withLock { $0.status } }

    package override var streamError: (any Error)? { pass.withLock { $0.error } }

    // After ``abort()`` the stream has bytes "available" so that its reader reads, and gets the error: a reader
    // that asks first (FoundationNetworking does) would otherwise take the answer for the end of the body and send
    // a truncated body as a whole one.
    package override var hasBytesAvailable: Bool { pass.withLock { $0.status == .open || $0.status == .error } }

    package override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        // The caller's buffer, filled before `read` returns, passed by address: the lock's region checking
        // cannot see that it does not escape.
        let address = Int(bitPattern: buffer)
        while true {
            let step = pass.withLock { pass in
                pass.read(
                    into: UnsafeMutableRawBufferPointer(
                        start: UnsafeMutableRawPointer(bitPattern: address),
                        count: max(length, 0)
                    )
                )
            }
            switch step {
            case .read(let count):
                return count
            case .wait(let pump):
                // A stream's next chunk is waited for outside the lock, so that ``abort()`` (a deadline, a
                // cancelled caller) and `close()` can end the wait from another thread.
                let chunk = Result { try pump.next() }
                guard pass.withLock({ $0.take(chunk, from: pump) }) else { return -1 }
            }
        }
    }

    /// Ends the current reading with an error, from any thread, even while a read waits for the next chunk of a
    /// stream: that read, every read after it, and every reading opened later fails (returns -1) rather than
    /// ending the body, and the stream's sequence sees its task cancelled. (A re-send reads a fresh stream.)
    ///
    /// URLSession on Linux reads a body stream on the work queue every session of the process shares: an
    /// exchange that ends (its deadline passed, its caller cancelled) aborts its upload first, so that a stream
    /// that has stalled lets go of that queue, and only then cancels its task, which waits for the queue.
    package func abort() {
        let renewal = pass.withLock { pass -> Renewal? in
            pass.aborted = true
            if pass.status == .open {
                pass.error = CancellationError()
                pass.end(.error)
            }
            return pass.renewal
        }
        renewal?.stream.abort()
    }

    /// Aborts the upload of `task`, when its body is a stream Courier made (``abort()``).
    static func abort(of task: URLSessionTask) {
        (task.originalRequest?.httpBodyStream as? UploadBodyStream)?.abort()
    }

    package override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }
}

extension UploadBodyStream.Pass {
    /// What a read does next.
    enum Step {
        /// It returns this count (-1 for an error, 0 at the end of the body).
        case read(Int)
        /// It waits for the pump's next chunk, outside the lock, then takes it (``take(_:from:)``) and reads again.
        case wait(ChunkPump)
    }

    /// Reads what is at hand into `target`: a file's or data's bytes, or a chunk the pump has already given.
    mutating func read(into target: UnsafeMutableRawBufferPointer) -> Step {
        guard status == .open, let reader, target.count > 0 else {
            return .read(status == .error ? -1 : 0)
        }
        do {
            let count: Int
            switch reader {
            case .segments(let segments):
                count = try segments.read(into: target)
            case .pump(let pump, var leftover):
                if leftover.isEmpty { return .wait(pump) }
                count = min(target.count, leftover.count)
                leftover.copyBytes(to: target.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
                leftover.removeFirst(count)
                self.reader = .pump(pump, leftover: leftover)
            case .ended:
                count = 0
            }
            if count == 0 {
                try counter.finish()
                end(.atEnd)
            } else {
                try counter.add(count)
            }
            return .read(count)
        } catch {
            fail(error)
            return .read(-1)
        }
    }

    /// Takes the chunk (or the end, or the error) `pump` gave a read that waited for it; `true` when that read
    /// goes on. A reading that was aborted, closed or opened again while it waited is left as it is, and the read
    /// that waited fails.
    mutating func take(_ chunk: Result<Data?, any Error>, from pump: ChunkPump) -> Bool {
        guard status == .open, case .pump(let current, let leftover)? = reader, current === pump, leftover.isEmpty
        else { return false }
        switch chunk {
        case .success(let data?): reader = .pump(pump, leftover: data)
        case .success(nil): reader = .ended
        case .failure(let error): fail(error)
        }
        return true
    }

    /// Ends the reading with `error`.
    private mutating func fail(_ error: any Error) {
        self.error = error
        end(.error)
    }

    /// Ends the current reading, closing its file or cancelling its stream, and sets `status`.
    mutating func end(_ status: Stream.Status) {
        switch reader {
        case .segments(let segments): segments.close()
        case .pump(let pump, _): pump.close()
        case .ended, nil: break
        }
        reader = nil
        self.status = status
    }
}

/// Turns the user's asynchronous chunk sequence into the blocking reads of an `InputStream`: a task reads
/// one chunk ahead, and ``next()`` waits for it on the reading thread (URLSession's, or whichever thread
/// reads the stream; the task runs on ``PumpExecutor``, so even a reader on the cooperative pool does not
/// starve it).
final class ChunkPump: Sendable {
    private struct State {
        var ready: Data?
        var end: Result<Void, any Error>?
        var wantsMore: CheckedContinuation<Void, Never>?
        var closed = false
    }

    private let state: LockedState<State>
    private let arrivals: DispatchSemaphore
    private let task: Task<Void, Never>

    init(_ make: @escaping @Sendable () -> ChunkIterator) {
        let state = LockedState(State())
        let arrivals = DispatchSemaphore(value: 0)
        self.state = state
        self.arrivals = arrivals
        // The producer runs on threads of its own, not the cooperative pool: the reader blocks its thread
        // while it waits, and a reader on the pool must not wait for work queued behind it.
        task = Task(executorPreference: PumpExecutor.shared) { [state, arrivals] in
            let iterator = make()
            do {
                while true {
                    // Wait until the last chunk has been taken (or the pump closed).
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let proceed = state.withLock { state -> Bool in
                            guard state.ready != nil, !state.closed else { return true }
                            state.wantsMore = continuation
                            return false
                        }
                        if proceed { continuation.resume() }
                    }
                    if state.withLock({ $0.closed }) { return }
                    try Task.checkCancellation()
                    let chunk = try await iterator.next()
                    // A sequence that ends when its task is cancelled (`AsyncStream` does) has not ended the body.
                    if chunk == nil { try Task.checkCancellation() }
                    // An empty chunk would read as the end of the stream.
                    if let chunk, chunk.isEmpty { continue }
                    state.withLock { state in
                        if let chunk {
                            state.ready = chunk
                        } else {
                            state.end = .success(())
                        }
                    }
                    arrivals.signal()
                    if chunk == nil { return }
                }
            } catch {
                state.withLock { $0.end = .failure(error) }
                arrivals.signal()
            }
        }
    }

    deinit { close() }

    /// The next chunk, waiting for it; `nil` at the end.
    func next() throws -> Data? {
        while true {
            let taken = try state.withLock { state -> (Data?, done: Bool) in
                if let chunk = state.ready {
                    state.ready = nil
                    return (chunk, false)
                }
                if let end = state.end {
                    try end.get()
                    return (nil, true)
                }
                return (nil, false)
            }
            if let chunk = taken.0 {
                let waiter = state.withLock { state in
                    defer { state.wantsMore = nil }
                    return state.wantsMore
                }
                waiter?.resume()
                return chunk
            }
            if taken.done { return nil }
            arrivals.wait()
            // Closed while waiting (an aborted upload): the sequence's next chunk will not come.
            if state.withLock({ $0.closed && $0.ready == nil && $0.end == nil }) { throw CancellationError() }
        }
    }

    /// Stops the producer: the user's sequence sees its task cancelled.
    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            defer { state.wantsMore = nil }
            return state.wantsMore
        }
        waiter?.resume()
        task.cancel()
        // Wakes a reader waiting in `next()`.
        arrivals.signal()
    }
}

/// The executor of the pumps' producer tasks: a concurrent dispatch queue, whose threads are not the
/// cooperative pool's.
final class PumpExecutor: TaskExecutor {
    static let shared = PumpExecutor()

    private let queue = DispatchQueue(label: "Courier.UploadPump", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
