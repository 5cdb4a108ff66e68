import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Client.events (EventSource)")
struct EventSourceTests {
    private let base = URL(string: "http://127.0.0.1")!

    /// Reads every event until the stream ends or throws; the error, if any, is returned beside them.
    private func drain(_ source: EventSource) async -> ([ServerSentEvent], (any Error)?) {
        var events: [ServerSentEvent] = []
        do {
            for try await event in source { events.append(event) }
            return (events, nil)
        } catch {
            return (events, error)
        }
    }

    @Test(
        "after a dropped connection it waits the server's retry delay and reconnects with Last-Event-ID",
        .timeLimit(.minutes(1))
    )
    func reconnectsWithLastEventID() async throws {
        let clock = ManualClock()
        let lastIDs = LockedState<[String?]>([])
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .handler { request in
                    lastIDs.withLock { $0.append(request.header("Last-Event-ID")) }
                    switch request.callIndex {
                    case 0:
                        return .events([.event("one", id: "1"), .event("two", id: "2", retry: .seconds(7)), .drop()])
                    case 1: return .events([.event("three", id: "3"), .text(": heartbeat\n\n")])
                    default: return .noContent
                    }
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let reader = Task { await drain(client.events(.get("/events"), clock: clock)) }
        // The drop: the stream sleeps the server's 7 seconds before the second connection.
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(7))])
        clock.advance(by: .seconds(7))
        // The second connection ends cleanly: the stream connects again after the same delay, and gets a 204.
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(7))
        let (events, error) = await reader.join()
        #expect(error == nil)
        #expect(events.map(\.data) == ["one", "two", "three"])
        #expect(events.map(\.id) == ["1", "2", "3"])
        #expect(lastIDs.withLock { $0 } == [nil, "2", "3"])
        let accept = mock.requests.map { $0.value(forHTTPHeaderField: "Accept") }
        #expect(accept == Array(repeating: "text/event-stream", count: 3))
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("a 204 ends the stream at once, with no event")
    func noContentEnds() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.noContent) }
        let client = Client(baseURL: base, transport: mock)
        let (events, error) = await drain(client.events(.get("/events")))
        #expect(events.isEmpty)
        #expect(error == nil)
        #expect(mock.requests.count == 1)
    }

    @Test("a status that is neither 2xx nor retryable throws, without reconnecting")
    func nonRetryableStatusThrows() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.status(404, body: "gone")) }
        let client = Client(baseURL: base, transport: mock)
        let (_, error) = await drain(client.events(.get("/events")))
        #expect((error as? CourierError)?.code == .unacceptableStatus)
        #expect((error as? CourierError)?.statusCode == 404)
        #expect(mock.requests.count == 1)
    }

    @Test("a 2xx that is not text/event-stream throws")
    func wrongContentTypeThrows() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.json("{}")) }
        let client = Client(baseURL: base, transport: mock)
        let (_, error) = await drain(client.events(.get("/events")))
        #expect((error as? CourierError)?.code == .unacceptableContentType)
        #expect((error as? CourierError)?.message.contains("not text/event-stream") == true)
    }

    @Test(
        "503s are retried like drops, and after maximumAttempts failed connections in a row the last error is thrown",
        .timeLimit(.minutes(1))
    )
    func givesUpAfterMaximumAttempts() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.serviceUnavailable()) }
        let client = Client(baseURL: base, transport: mock)
        let reconnection = EventSource.Reconnection(delay: .zero, maximumAttempts: 3)
        let (_, error) = await drain(client.events(.get("/events"), reconnection: reconnection))
        #expect((error as? CourierError)?.statusCode == 503)
        #expect(mock.requests.count == 3)
    }

    /// What a transport may report for a connection cut mid-body without saying so: AsyncHTTPClient's parser
    /// error at an early end of the stream, URLSession's unknown error on Linux.
    struct UnexplainedEnd: Error {}

    @Test("a body that fails with the transport's own error counts as a dropped connection: the stream reconnects")
    func transportErrorReconnects() async throws {
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .handler { request in
                    request.header("Last-Event-ID") == nil
                        ? .events([.event("one", id: "1"), .drop(UnexplainedEnd())]) : .noContent
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let (events, error) = await drain(client.events(.get("/events"), reconnection: .init(delay: .zero)))
        #expect(events.map(\.data) == ["one"])
        #expect(error == nil)
        #expect(mock.requests.last?.value(forHTTPHeaderField: "Last-Event-ID") == "1")
    }

    @Test("with .never, a dropped connection is thrown and not made again")
    func neverReconnects() async throws {
        let mock = MockTransport { MockRoute.get("/events").replies(.events([.event("a"), .drop()])) }
        let client = Client(baseURL: base, transport: mock)
        let (events, error) = await drain(client.events(.get("/events"), reconnection: .never))
        #expect(events.map(\.data) == ["a"])
        #expect((error as? URLError)?.code == .networkConnectionLost)
        #expect(mock.requests.count == 1)
    }

    @Test("an idle connection counts as lost: the stream reconnects", .timeLimit(.minutes(1)))
    func idleTimeoutReconnects() async throws {
        let clock = ManualClock()
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .handler { request in
                    request.callIndex == 0 ? .events([.event("a", id: "1"), .hold(until: Gate())]) : .noContent
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let reconnection = EventSource.Reconnection(delay: .seconds(1))
        let received = Locked<[String]>([])
        let reader = Task { () async -> ([String], (any Error)?) in
            do {
                for try await event in client.events(
                    .get("/events"),
                    reconnection: reconnection,
                    idleTimeout: .seconds(30),
                    clock: clock
                ) {
                    received.withLock { $0.append(event.data) }
                }
                return (received.value, nil)
            } catch {
                return (received.value, error)
            }
        }
        // The event has reached the reader, so its chunk arrived at 0 s: the watchdog sleeps until 30 s. (Moving
        // the clock before the chunk arrives would date it 30 s, and the watchdog would wait until 60 s.) Once it
        // has fired, the stream sleeps the reconnection delay.
        try await waitUntil { received.value == ["a"] }
        try await waitUntil { clock.pendingDeadlines.contains(ManualClock.Instant(offset: .seconds(30))) }
        clock.advance(by: .seconds(30))
        try await waitUntil { clock.pendingDeadlines.contains(ManualClock.Instant(offset: .seconds(31))) }
        clock.advance(by: .seconds(1))
        let (events, error) = await reader.join()
        #expect(events == ["a"])
        #expect(error == nil)
        #expect(mock.requests.count == 2)
        #expect(mock.requests.last?.value(forHTTPHeaderField: "Last-Event-ID") == "1")
    }

    @Test("100 streams that meet a 401 on reconnecting refresh the token once", .timeLimit(.minutes(1)))
    func oneRefreshForManyStreams() async throws {
        let refresher = TokenRefresher(token: .init("old")) { _ in .init("new") }
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .handler { request in
                    guard request.header("Authorization") == "Bearer new" else { return .unauthorized() }
                    return request.header("Last-Event-ID") == nil
                        ? .events([.event("first", id: "1"), .drop()]) : .noContent
                }
            )
        }
        let client = Client(baseURL: base, transport: mock, middleware: [.authenticating(with: refresher)])
        let reconnection = EventSource.Reconnection(delay: .zero)
        let results = await withTaskGroup(of: ([ServerSentEvent], (any Error)?).self) { group in
            for _ in 0..<100 {
                group.addTask { await drain(client.events(.get("/events"), reconnection: reconnection)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.1 == nil && $0.0.map(\.data) == ["first"] })
        #expect(refresher.refreshCount == 1)
    }

    @Test("leaving the loop closes the connection and ends the call", .timeLimit(.minutes(1)))
    func leavingTheLoopCloses() async throws {
        let counter = RequestCounter()
        let mock = MockTransport { MockRoute.get("/events").replies(.events([.event("a"), .hold(until: Gate())])) }
        let client = Client(baseURL: base, transport: mock, middleware: [.counting(counter)])
        for try await event in client.events(.get("/events")) {
            #expect(event.data == "a")
            break
        }
        #expect(counter.snapshot.inFlight == 0)
        #expect(counter.snapshot.cancelled == 1)
        #expect(client.lifecycle.inFlight == 0)
    }

    // MARK: Non-idempotent requests (an LLM's streamed completion)

    /// A chat completion's stream: a `POST` whose prompt the server bills each time it is sent.
    private static let prompt = Request<Data>.post("/v1/chat/stream", body: .data(Data("{\"prompt\":\"hi\"}".utf8)))

    /// A server that streams a completion to the first call and answers any later one with `204` (so that a
    /// stream that does connect again still ends, and the test sees how many calls it made).
    private static func completionServer(_ first: [MockChunk], method: HTTPMethod = .post) -> MockTransport {
        MockTransport {
            MockRoute(method, "/v1/chat/stream").replies(
                .handler { request in request.callIndex == 0 ? .events(first) : .noContent }
            )
        }
    }

    @Test(
        "a POST stream that the server ends cleanly finishes the loop, sent once and without waiting to reconnect",
        arguments: [HTTPMethod.post, .patch]
    )
    func nonIdempotentCleanEndFinishes(method: HTTPMethod) async throws {
        let clock = ManualClock()
        let mock = Self.completionServer([.event("Hel"), .event("lo"), .text("data: [DONE]\n\n")], method: method)
        let client = Client(baseURL: base, transport: mock)
        var request = Self.prompt
        request.method = method
        let source = client.events(request, clock: clock)
        let (events, error) = try await clock.run { await drain(source) }
        #expect(error == nil)
        #expect(events.map(\.data) == ["Hel", "lo", "[DONE]"])
        #expect(mock.requests.count == 1, "the prompt was sent \(mock.requests.count) times")
        #expect(clock.now.offset == .zero, "the stream waited to connect again")
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("a POST stream cut mid-body throws the error instead of sending the prompt again")
    func nonIdempotentDropThrows() async throws {
        let clock = ManualClock()
        let mock = Self.completionServer([.event("Hel", id: "1"), .drop()])
        let client = Client(baseURL: base, transport: mock)
        let source = client.events(Self.prompt, clock: clock)
        let (events, error) = try await clock.run { await drain(source) }
        #expect(events.map(\.data) == ["Hel"])
        #expect((error as? URLError)?.code == .networkConnectionLost)
        #expect(mock.requests.count == 1, "the prompt was sent \(mock.requests.count) times")
    }

    @Test("a POST stream that goes idle throws timedOut instead of sending the prompt again", .timeLimit(.minutes(1)))
    func nonIdempotentIdleThrows() async throws {
        let clock = ManualClock()
        let held = Arrivals()
        let mock = Self.completionServer([.event("Hel"), .hold(until: Gate(), counting: held)])
        let client = Client(baseURL: base, transport: mock)
        let source = client.events(Self.prompt, idleTimeout: .seconds(30), clock: clock)
        let reader = Task { await drain(source) }
        // The body holds once "Hel" was written, so its chunk is dated 0 s: time moves only after that (moved
        // before it, the watchdog would end a body that had sent nothing yet).
        await held.wait(for: 1)
        let (events, error) = try await clock.run { await reader.join() }
        #expect(events.map(\.data) == ["Hel"])
        #expect((error as? CourierError)?.code == .timedOut)
        #expect(mock.requests.count == 1)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test("a POST answered 503 throws at once: the server may have begun the work")
    func nonIdempotentRetryableStatusThrows() async throws {
        let clock = ManualClock()
        let mock = MockTransport {
            MockRoute.post("/v1/chat/stream").replies(
                .handler { request in request.callIndex == 0 ? .serviceUnavailable() : .noContent }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let source = client.events(Self.prompt, clock: clock)
        let (_, error) = try await clock.run { await drain(source) }
        #expect((error as? CourierError)?.statusCode == 503)
        #expect(mock.requests.count == 1)
    }

    @Test("a POST that carries an Idempotency-Key connects again as a GET does, with the same key")
    func idempotencyKeyReconnects() async throws {
        let clock = ManualClock()
        let mock = Self.completionServer([.event("Hel", id: "1"), .drop()])
        let client = Client(baseURL: base, transport: mock, middleware: [.idempotencyKey()])
        var request = Self.prompt
        request.headers["Idempotency-Key"] = "chat-42"
        let source = client.events(request, clock: clock)
        let (events, error) = try await clock.run { await drain(source) }
        #expect(events.map(\.data) == ["Hel"])
        #expect(error == nil)
        #expect(mock.requests.count == 2)
        #expect(mock.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") } == ["chat-42", "chat-42"])
        #expect(mock.requests.last?.value(forHTTPHeaderField: "Last-Event-ID") == "1")
    }

    @Test("a POST given a key by the idempotencyKey middleware alone is not sent again: each call gets a new key")
    func middlewareKeyDoesNotReconnect() async throws {
        let clock = ManualClock()
        let mock = Self.completionServer([.event("Hel"), .drop()])
        let client = Client(baseURL: base, transport: mock, middleware: [.idempotencyKey()])
        let source = client.events(Self.prompt, clock: clock)
        let (_, error) = try await clock.run { await drain(source) }
        #expect((error as? URLError)?.code == .networkConnectionLost)
        #expect(mock.requests.count == 1)
    }

    @Test("a PUT whose body can be sent only once is not sent again: a dropped stream throws the error")
    func oneShotBodyDoesNotReconnect() async throws {
        let clock = ManualClock()
        let mock = Self.completionServer([.event("Hel", id: "1"), .drop()], method: .put)
        let client = Client(baseURL: base, transport: mock)
        let (capture, continuation) = AsyncStream<Data>.makeStream()
        continuation.yield(Data("frame".utf8))
        continuation.finish()
        let form = MultipartForm([.stream("capture", once: capture, filename: "capture.pcap")])
        let request = Request<Data>.put("/v1/chat/stream", body: .multipart(form))
        let source = client.events(request, clock: clock)
        let (events, error) = try await clock.run { await drain(source) }
        #expect(events.map(\.data) == ["Hel"])
        #expect((error as? URLError)?.code == .networkConnectionLost)
        #expect(mock.requests.count == 1, "the request was sent \(mock.requests.count) times")
    }

    // MARK: Retry-After and the content type

    @Test(
        "a 503's Retry-After sets the delay before connecting again, within the policy's maximum",
        arguments: [(10, Duration.seconds(10)), (600, .seconds(60)), (0, .zero)]
    )
    func retryAfterIsHonoured(seconds: Int, expected: Duration) async throws {
        let clock = ManualClock()
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .handler { request in
                    request.callIndex == 0
                        ? .serviceUnavailable(retryAfter: .seconds(seconds)) : .noContent
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let source = client.events(.get("/events"), clock: clock)
        let (_, error) = try await clock.run { await drain(source) }
        #expect(error == nil)
        #expect(mock.requests.count == 2)
        #expect(clock.now.offset == expected)
    }

    @Test("a Retry-After as an HTTP-date is honoured too; one that does not parse leaves the policy's delay")
    func retryAfterDate() async throws {
        for (value, expected) in [("Wed, 21 Oct 2015 07:28:00 GMT", Duration.zero), ("soon", .seconds(3))] {
            let clock = ManualClock()
            let mock = MockTransport {
                MockRoute.get("/events").replies(
                    .handler { request in
                        request.callIndex == 0 ? .status(503, headers: ["Retry-After": value]) : .noContent
                    }
                )
            }
            let client = Client(baseURL: base, transport: mock)
            let source = client.events(.get("/events"), clock: clock)
            let (_, error) = try await clock.run { await drain(source) }
            #expect(error == nil)
            #expect(mock.requests.count == 2)
            #expect(clock.now.offset == expected, "Retry-After: \(value)")
        }
    }

    @Test(
        "a 2xx whose type is not text/event-stream throws unacceptableContentType, naming the type received",
        arguments: [
            ("application/json", "of type application/json"),
            ("text/event-streamX", "of type text/event-streamX"),
            ("text/event-stream-v2; charset=utf-8", "of type text/event-stream-v2; charset=utf-8"),
            ("text/event-\u{17F}tream", "of type text/event-\u{17F}tream"),
            ("\u{A0}text/event-stream", "of type \u{A0}text/event-stream"),
            ("", "without a Content-Type"),
        ]
    )
    func unacceptableContentType(type: String, described: String) async throws {
        let headers = type.isEmpty ? [:] : ["Content-Type": type]
        let mock = MockTransport { MockRoute.get("/events").replies(.stream([.text("{}")], headers: headers)) }
        let client = Client(baseURL: base, transport: mock)
        let (_, error) = await drain(client.events(.get("/events")))
        let courierError = try #require(error as? CourierError)
        #expect(courierError.code == .unacceptableContentType)
        #expect(courierError.statusCode == 200)
        #expect(courierError.message.contains(described))
        #expect(courierError.message.contains("text/event-stream"))
        #expect(mock.requests.count == 1)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test(
        "text/event-stream is matched as a media type: any case, parameters after a semicolon, spaces around",
        arguments: [
            "text/event-stream", "Text/Event-Stream", "text/event-stream; charset=utf-8", " text/event-stream ;x=1",
        ]
    )
    func acceptedContentTypes(type: String) async throws {
        let mock = MockTransport {
            MockRoute.get("/events").replies(.stream([.text("data: a\n\n")], headers: ["Content-Type": type]))
        }
        let client = Client(baseURL: base, transport: mock)
        let (events, error) = await drain(client.events(.get("/events"), reconnection: .never))
        #expect(error == nil)
        #expect(events.map(\.data) == ["a"])
    }

    @Test("StreamedBody's lines and JSON Lines read a streamed body")
    func bodyConveniences() async throws {
        struct Row: Decodable, Equatable { let id: Int }
        let mock = MockTransport {
            MockRoute.get("/rows").replies(.stream([.text("{\"id\":1}\n{\"id\""), .text(":2}\n")]))
        }
        let client = Client(baseURL: base, transport: mock)
        var rows: [Row] = []
        for try await row in try await client.stream(.get("/rows")).body.jsonLines(of: Row.self) { rows.append(row) }
        #expect(rows == [Row(id: 1), Row(id: 2)])
        var lines: [String] = []
        for try await line in try await client.stream(.get("/rows")).body.lines { lines.append(line) }
        #expect(lines == ["{\"id\":1}", "{\"id\":2}"])
    }
}
