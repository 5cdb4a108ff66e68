import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport whose bodies the test writes chunk by chunk; it records every stream it opened and whether
/// each was stopped by its reader.
private final class ScriptedStreams: Transport {
    struct Opened: Sendable {
        let continuation: AsyncThrowingStream<Data, any Error>.Continuation
        let stopped: Gate
    }

    private let statuses: LockedState<[Int]>
    private let opened = LockedState<[Opened]>([])
    let arrivals = Arrivals()

    init(statuses: [Int] = [200]) {
        self.statuses = LockedState(statuses)
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        Issue.record("a streamed call must use stream(_:)")
        throw CancellationError()
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let status = statuses.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
        let (chunks, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let stopped = Gate()
        continuation.onTermination = { termination in
            if case .cancelled = termination { stopped.open() }
        }
        if status != 200 {
            continuation.yield(Data("status \(status)".utf8))
            continuation.finish()
        }
        opened.withLock { $0.append(Opened(continuation: continuation, stopped: stopped)) }
        arrivals.arrive()
        // swift-format-ignore: NeverForceUnwrap
        let response = HTTPURLResponse(
            url: request.url!,
            statusCode: status,
            httpVersion: "HTTP/1.1",
            headerFields: [:]
        )!
        return (StreamedBody(chunks), response)
    }

    func stream(_ index: Int) -> Opened { opened.withLock { $0[index] } }
    var count: Int { opened.withLock { $0.count } }
}

private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

@Suite("Client.stream")
struct ClientStreamingTests {
    private let url = URL(string: "http://127.0.0.1/events")!

    @Test("middleware see the 2xx head with an empty body; the caller reads the chunks as they are written")
    func middlewareSeeHead() async throws {
        let transport = ScriptedStreams()
        let seen = LockedState<[(Int, Int)]>([])
        let recorder = Middleware { request, next in
            let (data, response) = try await next(request)
            seen.withLock { $0.append((response.statusCode, data.count)) }
            return (data, response)
        }
        let client = Client(transport: transport, middleware: [recorder])
        let (body, response) = try await client.stream(URLRequest(url: url))
        #expect(response.statusCode == 200)
        #expect(seen.withLock { $0.map(\.0) } == [200])
        #expect(seen.withLock { $0.map(\.1) } == [0])
        let writer = transport.stream(0).continuation
        writer.yield(Data("one ".utf8))
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next().map(text) == "one ")
        writer.yield(Data("two".utf8))
        writer.finish()
        #expect(try await iterator.next().map(text) == "two")
        #expect(try await iterator.next() == nil)
    }

    @Test(
        "a non-2xx body is read whole: a retried 503 is seen with its body, then the 200 streams",
        .timeLimit(.minutes(1))
    )
    func errorBodiesAreBuffered() async throws {
        let transport = ScriptedStreams(statuses: [503, 200])
        let bodies = LockedState<[String]>([])
        let recorder = Middleware { request, next in
            let (data, response) = try await next(request)
            bodies.withLock { $0.append("\(response.statusCode):\(text(data))") }
            return (data, response)
        }
        let policy = RetryPolicy(backoff: .immediate, budget: nil)
        let client = Client(transport: transport, middleware: [.retry(policy), recorder])
        let (body, response) = try await client.stream(URLRequest(url: url))
        #expect(response.statusCode == 200)
        #expect(bodies.withLock { $0 } == ["503:status 503", "200:"])
        transport.stream(1).continuation.yield(Data("streamed".utf8))
        transport.stream(1).continuation.finish()
        #expect(text(try await body.collect(upTo: 100)) == "streamed")
    }

    @Test("a typed stream refuses a status it does not accept, with the error body, and leaves nothing in flight")
    func typedStatusCheck() async throws {
        let transport = ScriptedStreams(statuses: [404])
        let client = Client(baseURL: URL(string: "http://127.0.0.1")!, transport: transport)
        let error = await #expect(throws: CourierError.self) {
            _ = try await client.stream(.get("/missing"))
        }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.statusCode == 404)
        #expect(error?.responseBody.map(text) == "status 404")
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("cancelling the reading task stops the transport at once and ends the call", .timeLimit(.minutes(1)))
    func cancellingTheReaderStopsTransport() async throws {
        let transport = ScriptedStreams()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url))
        #expect(client.lifecycle.inFlight == 1, "a streamed call is in flight until its body ends")
        transport.stream(0).continuation.yield(Data("first".utf8))
        let reading = Gate()
        let reader = Task {
            var iterator = body.makeAsyncIterator()
            _ = try await iterator.next()
            reading.open()
            return try await iterator.next()
        }
        await reading.wait()
        reader.cancel()
        await #expect(throws: CancellationError.self) { _ = try await reader.join() }
        await transport.stream(0).stopped.wait()
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("a body dropped unread stops the transport and ends the call", .timeLimit(.minutes(1)))
    func droppedBodyStopsTransport() async throws {
        let transport = ScriptedStreams()
        let client = Client(transport: transport)
        do {
            let (body, response) = try await client.stream(URLRequest(url: url))
            #expect(response.statusCode == 200)
            _ = body
        }
        await transport.stream(0).stopped.wait()
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test(
        "a read that waits longer than the idle timeout throws timedOut and stops the transport",
        .timeLimit(.minutes(1))
    )
    func idleTimeout() async throws {
        let transport = ScriptedStreams()
        let clock = ManualClock()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url), idleTimeout: .seconds(5), clock: clock)
        let writer = transport.stream(0).continuation
        var iterator = body.makeAsyncIterator()
        writer.yield(Data("a".utf8))
        #expect(try await iterator.next().map(text) == "a")
        // Chunks that keep coming within the idle timeout keep the body alive, however long it runs.
        for _ in 0..<3 {
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(4))
            writer.yield(Data("b".utf8))
            #expect(try await iterator.next().map(text) == "b")
        }
        let reader = Task { [iterator] in
            var iterator = iterator
            return try await iterator.next()
        }
        // The watchdog sleeps until 5 seconds after the last chunk it saw (12 s) or earlier, and looks at the
        // time when it wakes: one step wakes it at 17 s, whenever it went to sleep.
        clock.advance(by: .seconds(5))
        let error = await #expect(throws: CourierError.self) { _ = try await reader.join() }
        #expect(error?.code == .timedOut)
        #expect(error?.message.contains("idle timeout") == true)
        await transport.stream(0).stopped.wait()
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("the total timeout ends a body that is still flowing", .timeLimit(.minutes(1)))
    func totalTimeout() async throws {
        let transport = ScriptedStreams()
        let clock = ManualClock()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url), totalTimeout: .seconds(10), clock: clock)
        let writer = transport.stream(0).continuation
        var iterator = body.makeAsyncIterator()
        writer.yield(Data("a".utf8))
        #expect(try await iterator.next() != nil)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(10))
        await transport.stream(0).stopped.wait()
        let error = await #expect(throws: CourierError.self) { _ = try await iterator.next() }
        #expect(error?.code == .timedOut)
        #expect(error?.message.contains("total timeout") == true)
    }

    @Test("a body the chain left behind (an attempt it discarded) is stopped; the returned response's body streams")
    func discardedAttemptIsStopped() async throws {
        let transport = ScriptedStreams()
        let twice = Middleware { request, next in
            _ = try await next(request)
            return try await next(request)
        }
        let client = Client(transport: transport, middleware: [twice])
        let (body, _) = try await client.stream(URLRequest(url: url))
        await transport.stream(0).stopped.wait()
        transport.stream(1).continuation.yield(Data("second".utf8))
        transport.stream(1).continuation.finish()
        #expect(text(try await body.collect(upTo: 100)) == "second")
    }

    @Test("a transport that does not stream still works: its body arrives as one chunk")
    func bufferedTransport() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.text("all at once")) }
        let client = Client(transport: mock)
        let (body, _) = try await client.stream(URLRequest(url: url))
        var chunks: [String] = []
        for try await chunk in body { chunks.append(text(chunk)) }
        #expect(chunks == ["all at once"])
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("collect(upTo:) refuses a longer body and stops the transport")
    func collectLimit() async throws {
        let transport = ScriptedStreams()
        let client = Client(transport: transport)
        let (body, _) = try await client.stream(URLRequest(url: url))
        transport.stream(0).continuation.yield(Data(repeating: 1, count: 8))
        let error = await #expect(throws: CourierError.self) { _ = try await body.collect(upTo: 4) }
        #expect(error?.code == .bodyTooLarge)
        await transport.stream(0).stopped.wait()
    }
}

/// The Streaming article's promises that need no transport.
@Suite("Streaming article")
struct StreamingArticleTests {
    @Test("the body reads ahead about 1 MiB: with no reader, the source is pulled no further", .timeLimit(.minutes(1)))
    func readsAheadBounded() async throws {
        let pulled = LockedState(0)
        let chunk = Data(repeating: 0, count: 64 * 1024)
        let gate = Gate()
        let source = AsyncThrowingStream<Data, any Error> { continuation in
            Task {
                for _ in 0..<64 {  // 4 MiB on offer
                    await Task.yield()
                    continuation.yield(chunk)
                }
                gate.open()
                continuation.finish()
            }
        }
        let counting = source.map { chunk in
            pulled.withLock { $0 += 1 }
            return chunk
        }
        let body = StreamedBody(counting)
        await gate.wait()
        // The pump writes until more than 1 MiB waits (17 chunks of 64 KiB), then waits for the reader.
        try await waitUntil { body.pipe.progress.isPaused }
        #expect(pulled.withLock { $0 } == 17)
        #expect(body.pipe.bufferedBytes == 17 * 64 * 1024)
        var total = 0
        for try await chunk in body { total += chunk.count }
        #expect(total == 64 * 64 * 1024)
    }

    /// Returns a response object of its own, with one more header, in place of the one it got.
    private static let relabel = Middleware { request, next in
        let (data, response) = try await next(request)
        var headers = response.allHeaderFields as? [String: String] ?? [:]
        headers["X-Relabelled"] = "yes"
        // swift-format-ignore: NeverForceUnwrap
        let copy = HTTPURLResponse(url: response.url!, statusCode: 200, httpVersion: nil, headerFields: headers)!
        return (data, copy)
    }

    @Test("a middleware that returns its own response object in place of a streamed one keeps the stream")
    func replacedResponseKeepsStream() async throws {
        let mock = MockTransport { MockRoute.get("/s").replies(.stream([.text("kept")])) }
        let client = Client(baseURL: URL(string: "http://127.0.0.1")!, transport: mock, middleware: [Self.relabel])
        let (body, response) = try await client.stream(.get("/s"))
        #expect(response.value(forHTTPHeaderField: "X-Relabelled") == "yes")
        #expect(String(decoding: try await body.collect(upTo: 10), as: UTF8.self) == "kept")
    }

    @Test(
        "counting follows a streamed call whose head a middleware inside replaced: in flight until its body ends",
        .timeLimit(.minutes(1))
    )
    func countingFollowsAReplacedHead() async throws {
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/s").replies(.stream([.text("a"), .hold(until: release), .text("b")]))
        }
        let counter = RequestCounter()
        let client = Client(
            baseURL: URL(string: "http://127.0.0.1")!,
            transport: mock,
            middleware: [.counting(counter), Self.relabel]
        )
        let (body, _) = try await client.stream(.get("/s"))
        #expect(counter.snapshot.inFlight == 1)
        #expect(counter.snapshot.succeeded == 0)
        release.open()
        #expect(String(decoding: try await body.collect(upTo: 10), as: UTF8.self) == "ab")
        try await waitUntil { counter.snapshot.inFlight == 0 }
        #expect(counter.snapshot.succeeded == 1)
    }
}
