import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("MockResponse.stream")
struct ScriptedStreamTests {
    private let base = URL(string: "http://127.0.0.1")!

    @Test(
        "the head comes at once; delays on a manual clock hold the reader until the test moves time",
        .timeLimit(.minutes(1))
    )
    func delaysOnManualClock() async throws {
        let clock = ManualClock()
        let mock = MockTransport {
            MockRoute.get("/ticks").replies(.stream([.text("1"), .delay(.seconds(30), on: clock), .text("2")]))
        }
        let client = Client(baseURL: base, transport: mock)
        let (body, response) = try await client.stream(.get("/ticks"))
        #expect(response.statusCode == 200)
        var iterator = body.makeAsyncIterator()
        #expect(try await iterator.next() == Data("1".utf8))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(30))
        #expect(try await iterator.next() == Data("2".utf8))
        #expect(try await iterator.next() == nil)
    }

    @Test("a drop mid-stream is thrown by the reader after the chunks before it")
    func dropMidStream() async throws {
        let mock = MockTransport { MockRoute.get("/x").replies(.stream([.text("part"), .drop()])) }
        let client = Client(baseURL: base, transport: mock)
        let (body, _) = try await client.stream(.get("/x"))
        var received = Data()
        let error = await #expect(throws: URLError.self) {
            for try await chunk in body { received.append(chunk) }
        }
        #expect(error?.code == .networkConnectionLost)
        #expect(received == Data("part".utf8))
    }

    @Test("SSE events are written in the wire format, one chunk each, with the event-stream content type")
    func eventsWireFormat() async throws {
        let mock = MockTransport {
            MockRoute.get("/events").replies(
                .events([.event("line 1\nline 2", type: "update", id: "7", retry: .milliseconds(1500)), .event("x")])
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let (body, response) = try await client.stream(.get("/events"))
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "text/event-stream")
        var chunks: [String] = []
        for try await chunk in body { chunks.append(String(decoding: chunk, as: UTF8.self)) }
        #expect(chunks == ["event: update\nid: 7\nretry: 1500\ndata: line 1\ndata: line 2\n\n", "data: x\n\n"])
    }

    @Test("a call that does not stream gets the whole scripted body, or the drop")
    func bufferedCalls() async throws {
        let mock = MockTransport {
            MockRoute.get("/whole").replies(.stream([.text("a"), .text("b")]))
            MockRoute.get("/dropped").replies(.stream([.text("a"), .drop()]))
        }
        let client = Client(baseURL: base, transport: mock)
        let whole: String = try await client.send(.get("/whole"))
        #expect(whole == "ab")
        await #expect(throws: CourierError.self) { let _: String = try await client.send(.get("/dropped")) }
    }

    @Test(
        "TestTransport streams through the installed mock",
        .mockTransport { MockRoute.get("/s").replies(.stream([.text("via test transport")])) }
    )
    func testTransportStreams() async throws {
        let client = Client(baseURL: base, transport: TestTransport())
        let (body, _) = try await client.stream(.get("/s"))
        #expect(String(decoding: try await body.collect(upTo: 100), as: UTF8.self) == "via test transport")
    }
}
