public import Foundation

/// The body of a streamed response: its bytes in chunks, as they arrive.
///
/// ```swift
/// let (body, response) = try await client.stream(.get("/exports/2026.ndjson"))
/// for try await chunk in body {
///     try file.write(contentsOf: chunk)
/// }
/// ```
///
/// - **Backpressure**: the transport reads ahead at most about 1 MiB; while you do not read, it waits, so a
///   slow reader keeps memory bounded.
/// - **Once**: a body can be read once; copies share it (two loops over copies split its chunks between them).
/// - **Stopping early**: leaving the loop (`break`, `return`, a throw) stops the transport at once (the
///   connection is closed) and ends the call, even while the body value is still in scope; so do cancelling
///   the reading task, calling ``cancel()``, and dropping the body unread. With two loops at once, the body
///   stops when the last is left; a loop begun after that throws `CancellationError`.
/// - **Errors**: a connection lost mid-body, or an idle timeout, is thrown by the loop.
public struct StreamedBody: AsyncSequence, Sendable {
    /// A chunk of the body, as it arrived.
    public typealias Element = Data
    /// What reading can throw: a transport error, a timeout, or `CancellationError`.
    public typealias Failure = any Error

    /// Ends the body when the last copy of it (and of its iterators) is gone, so a body abandoned unread does
    /// not keep its connection open.
    final class Handle: Sendable {
        let pipe: ChunkPipe

        init(_ pipe: ChunkPipe) {
            self.pipe = pipe
        }

        deinit {
            pipe.fail(CancellationError())
        }
    }

    let handle: Handle

    var pipe: ChunkPipe { handle.pipe }

    init(pipe: ChunkPipe) {
        handle = Handle(pipe)
    }

    /// A body of bytes already in memory, as one chunk.
    public init(_ data: Data) {
        self.init(pipe: ChunkPipe(finished: data))
    }

    /// A body read from `chunks` (for a test, or a transport of your own). It is read ahead by a task of
    /// its own, with the same backpressure as a transport's body; stopping the body cancels that task.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == Data {
        let pipe = ChunkPipe()
        // On the executor shared work prefers (ManualClock.run's in tests), so that time does not move while a chunk
        // is on its way.
        let pump = SharedWork.task {
            do {
                for try await chunk in chunks {
                    try await pipe.write(chunk)
                }
                pipe.finish(error: nil)
            } catch {
                pipe.finish(error: error)
            }
        }
        pipe.onStop { pump.cancel() }
        self.init(pipe: pipe)
    }

    /// Starts reading the body (it can be read once). The iterator and its copies are one reader: when the
    /// last copy is dropped (the loop is left), the body is stopped, unless another iterator still reads it.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: Reader(handle))
    }

    /// One iterator's hold on the body, shared by the iterator's copies: made by `makeAsyncIterator()`, and
    /// gone when the loop that read it is left, which stops the body at once (``ChunkPipe/removeReader()``)
    /// even while the body value itself lives on. It keeps the body's handle, so a loop over a body nobody
    /// else holds is not stopped under it.
    final class Reader: Sendable {
        let handle: Handle

        init(_ handle: Handle) {
            self.handle = handle
            handle.pipe.addReader()
        }

        deinit {
            handle.pipe.removeReader()
        }
    }

    /// Reads the body's chunks one by one.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: Reader

        /// The next chunk, or `nil` at the end of the body.
        ///
        /// - Throws: The transport's error (a connection lost mid-body), ``CourierError/Code/timedOut`` for an
        ///   idle or total timeout, or `CancellationError` when the reading task is cancelled or the body was
        ///   stopped.
        public mutating func next() async throws -> Data? {
            try await reader.handle.pipe.next()
        }
    }

    /// Reads the rest of the body into memory.
    ///
    /// - Parameter limit: The most bytes to accept.
    /// - Throws: ``CourierError/Code/bodyTooLarge`` when the body is longer than `limit` (the rest is not
    ///   read: the transport is stopped), or what reading throws.
    public func collect(upTo limit: Int) async throws -> Data {
        var data = Data()
        for try await chunk in self {
            guard chunk.count <= limit - data.count else {
                cancel()
                throw CourierError(
                    .bodyTooLarge,
                    message: "the response body is larger than the limit of \(limit) bytes given to collect(upTo:)"
                )
            }
            data.append(chunk)
        }
        return data
    }

    /// Stops reading: buffered chunks are dropped, the transport is stopped (the connection is closed), and a
    /// read in progress or any later one throws `CancellationError`. Calling it after the end does nothing.
    public func cancel() {
        pipe.fail(CancellationError())
    }
}
