import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("ChunkPipe and cancellation", .timeLimit(.minutes(1)))
struct ChunkPipeCancellationTests {
    @Test("a cancelled reader gets CancellationError even when a chunk is already buffered, and the source is stopped")
    func cancelledWithChunkBuffered() async throws {
        let pipe = ChunkPipe()
        let stopped = Locked(false)
        pipe.onStop { stopped.withLock { $0 = true } }
        try await pipe.write(Data("first".utf8))
        try await pipe.write(Data("second".utf8))
        let body = StreamedBody(pipe: pipe)
        let readFirst = Gate()
        let gate = Gate()
        let reader = Task {
            var iterator = body.makeAsyncIterator()
            let first = try await iterator.next()
            readFirst.open()
            await gate.wait()
            // Cancelled meanwhile: the next read must not hand over the buffered chunk.
            let second: Result<Data?, any Error>
            do {
                second = .success(try await iterator.next())
            } catch {
                second = .failure(error)
            }
            return (first, second)
        }
        await readFirst.wait()
        reader.cancel()
        gate.open()
        let (first, second) = try await reader.join()
        #expect(first == Data("first".utf8))
        #expect(throws: CancellationError.self) { try second.get() }
        #expect(stopped.value)
    }
}
