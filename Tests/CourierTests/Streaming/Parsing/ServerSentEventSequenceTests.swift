import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("ServerSentEventSequence")
struct ServerSentEventSequenceTests {
    @Test("the example of ServerSentEvent's documentation")
    func documentedExample() async throws {
        let stream = "event: update\nid: 42\ndata: {\"price\": 10}\ndata: {\"price\": 11}\n\n"
        let events = try await ServerSentEventSequence(Chunks(stream)).elements()
        #expect(events == [ServerSentEvent(type: "update", data: "{\"price\": 10}\n{\"price\": 11}", id: "42")])
    }

    @Test("a CRLF split between two chunks is one line ending")
    func splitCRLF() async throws {
        let body = Chunks(["data: a\r", "\ndata: b\r", "\n\r", "\n"].map { Data($0.utf8) })
        let events = try await ServerSentEventSequence(body).elements()
        #expect(events == [ServerSentEvent(data: "a\nb")])
    }

    @Test("a BOM split across chunks is removed")
    func splitBOM() async throws {
        let body = Chunks(byteOrderMark + bytes("data: a\n\n"), chunkSize: 1)
        #expect(try await ServerSentEventSequence(body).elements() == [ServerSentEvent(data: "a")])
    }

    @Test("events come as soon as their empty line arrives, before the body ends")
    func eventsArriveEarly() async throws {
        let body = Chunks(["data: a\n\ndata: b\n", "\n"].map { Data($0.utf8) })
        var iterator = ServerSentEventSequence(body).makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "a"))
        #expect(try await iterator.next() == ServerSentEvent(data: "b"))
        #expect(try await iterator.next() == nil)
        #expect(try await iterator.next() == nil)
    }

    @Test("the base is read only as far as the next event needs")
    func readsLazily() async throws {
        let body = EndlessChunks("data: a\n\n")
        var iterator = ServerSentEventSequence(body).makeAsyncIterator()
        #expect(body.bytesSent == 0)
        #expect(try await iterator.next() == ServerSentEvent(data: "a"))
        #expect(body.bytesSent == body.chunk.count)
    }

    @Test("a sequence for a reconnection starts from the previous last event ID")
    func resumes() async throws {
        let parser = ServerSentEventParser(maximumEventSize: 100, lastEventID: "5", reconnectionTime: .seconds(1))
        let events = try await ServerSentEventSequence(Chunks("data: a\n\n"), parser: parser).elements()
        #expect(events == [ServerSentEvent(data: "a", id: "5")])
    }

    @Test("the iterator keeps the last event ID and reconnection time for a reconnection")
    func iteratorState() async throws {
        let body = Chunks("retry: 2500\nid: 9\ndata: a\n\nid: 10\n\ndata: b\nid: 11\n")
        var iterator = ServerSentEventSequence(body).makeAsyncIterator()
        while try await iterator.next() != nil {}
        let state = try #require(iterator.eventParser)
        #expect(state.lastEventID == "10")
        #expect(state.reconnectionTime == .milliseconds(2500))
    }

    @Test("an event of exactly 1 MiB passes by default; a byte more is bodyTooLarge")
    func defaultLimit() async throws {
        let limit = 1024 * 1024
        let fits = "data:" + String(repeating: "x", count: limit - 5) + "\n\n"
        let events = try await ServerSentEventSequence(Chunks(fits, chunkSize: 4096)).elements()
        #expect(events.map(\.data.utf8.count) == [limit - 5])

        let tooLong = "data:" + String(repeating: "x", count: limit - 4) + "\n\n"
        await #expect(throws: CourierError.self) {
            _ = try await ServerSentEventSequence(Chunks(tooLong, chunkSize: 4096)).elements()
        }
        let split =
            "data:" + String(repeating: "x", count: limit / 2) + "\ndata:" + String(repeating: "x", count: limit / 2)
        let (_, error) = await ServerSentEventSequence(Chunks(split + "\n\n")).collected()
        #expect((error as? CourierError)?.code == .bodyTooLarge)
    }

    @Test("a line that never ends fails after at most the maximum is held", .timeLimit(.minutes(1)))
    func endlessLine() async throws {
        let body = EndlessChunks(
            "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        )
        let (events, error) = await ServerSentEventSequence(body, maximumEventSize: 10_000).collected()
        #expect(events.isEmpty)
        let courierError = try #require(error as? CourierError)
        #expect(courierError.code == .bodyTooLarge)
        #expect(courierError.message == "line 1 of the event stream is longer than the maximum of 10000 bytes")
        #expect(body.bytesSent <= 10_000 + body.chunk.count)
    }

    @Test("an event whose data never ends fails, naming the line", .timeLimit(.minutes(1)))
    func endlessData() async throws {
        let body = EndlessChunks("data: 0123456789\n")
        let (_, error) = await ServerSentEventSequence(body, maximumEventSize: 1000).collected()
        let courierError = try #require(error as? CourierError)
        #expect(courierError.code == .bodyTooLarge)
        #expect(
            courierError.message
                == "the data of the event at line 92 of the event stream is longer than the maximum of 1000 bytes"
        )
        #expect(body.bytesSent == 92 * body.chunk.count)
    }

    @Test("keep-alive comments without empty lines do not fill the limit")
    func manyComments() async throws {
        let stream = String(repeating: ": keep-alive\n", count: 10_000) + "data: x\n\n"
        let events = try await ServerSentEventSequence(Chunks(stream, chunkSize: 1000), maximumEventSize: 100)
            .elements()
        #expect(events == [ServerSentEvent(data: "x")])
    }

    @Test("events before a too-long line are delivered; then it throws and ends")
    func eventsBeforeError() async throws {
        let body = Chunks("data: a\n\ndata: \(String(repeating: "x", count: 100))\n\ndata: c\n\n", chunkSize: 7)
        var iterator = ServerSentEventSequence(body, maximumEventSize: 50).makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "a"))
        await #expect(throws: CourierError.self) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test("the base's error comes through unchanged, after the events before it; then the sequence ends")
    func baseError() async throws {
        struct Dropped: Error, Equatable {}
        let body = FailingChunks(chunks: [Data("data: a\n\ndata: b\n".utf8)], error: Dropped())
        var iterator = ServerSentEventSequence(body).makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "a"))
        await #expect(throws: Dropped()) { try await iterator.next() }
        #expect(try await iterator.next() == nil)
    }

    @Test(
        "cancelling the consuming task cancels the base's read: CancellationError, unwrapped",
        .timeLimit(.minutes(1))
    )
    func cancellation() async throws {
        let reader = Task { try await ServerSentEventSequence(SilentBody()).elements() }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.join() }
    }
}
