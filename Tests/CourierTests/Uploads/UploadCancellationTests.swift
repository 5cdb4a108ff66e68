import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A send cancelled while its body is being read leaves no file open and no producer running.
@Suite("Cancelling an upload", .timeLimit(.minutes(1)))
struct UploadCancellationTests {
    /// A transport that reads part of the body, the way `mode` reads it, then waits to be cancelled.
    struct PartialReader: Transport {
        enum Mode { case inputStream, chunks }
        let mode: Mode
        let started: Arrivals

        func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let stream = try #require(request.httpBodyStream as? UploadBodyStream)
            switch mode {
            case .inputStream:
                stream.open()
                var buffer = [UInt8](repeating: 0, count: 1000)
                #expect(stream.read(&buffer, maxLength: buffer.count) == 1000)
                started.arrive()
                try await waitForCancellation()
            case .chunks:
                var iterator = stream.source.chunks.makeAsyncIterator()
                _ = try await iterator.next()
                started.arrive()
                try await waitForCancellation()
            }
            throw CancellationError()
        }
    }

    @Test(
        "a file is closed when its send is cancelled mid-upload",
        arguments: [PartialReader.Mode.inputStream, .chunks]
    )
    func fileClosed(_ mode: PartialReader.Mode) async throws {
        let file = try TemporaryFile(size: 1_000_000)
        defer { file.remove() }
        let started = Arrivals()
        let client = Client(baseURL: exampleBaseURL, transport: PartialReader(mode: mode, started: started))
        let task = Task {
            try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: .file(file.url)))
        }
        await started.wait(for: 1)
        #expect(file.isOpen)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(!file.isOpen)
    }

    @Test(
        "a stream factory's sequence is ended when its send is cancelled mid-upload",
        arguments: [PartialReader.Mode.inputStream, .chunks]
    )
    func streamEnded(_ mode: PartialReader.Mode) async throws {
        let started = Arrivals()
        let terminated = Arrivals()
        let body = RequestBody.stream {
            AsyncStream<Data> { continuation in
                continuation.onTermination = { _ in terminated.arrive() }
                continuation.yield(Data(count: 5000))
                // Never finishes: only cancellation ends it.
            }
        }
        let client = Client(baseURL: exampleBaseURL, transport: PartialReader(mode: mode, started: started))
        let task = Task { try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: body)) }
        await started.wait(for: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        await terminated.wait(for: 1)
        #expect(terminated.count == 1)
    }
}
