import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the layers that keep or share responses treat a streamed call, and how counting sees it.
@Suite("Streaming through the middleware")
struct StreamingMiddlewareTests {
    private let base = URL(string: "http://127.0.0.1")!

    @Test(
        "counting: a streamed call is in flight until its body ends, and ends as its body does",
        .timeLimit(.minutes(1))
    )
    func countingUntilBodyEnds() async throws {
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/ok").replies(.stream([.text("a"), .hold(until: release), .text("b")]))
            MockRoute.get("/lost").replies(.stream([.text("a"), .drop()]))
            MockRoute.get("/stopped").replies(.stream([.text("a"), .hold(until: Gate())]))
        }
        let counter = RequestCounter()
        let client = Client(baseURL: base, transport: mock, middleware: [.counting(counter)])

        let (ok, _) = try await client.stream(.get("/ok"))
        #expect(counter.snapshot.inFlight == 1)
        release.open()
        #expect(String(decoding: try await ok.collect(upTo: 10), as: UTF8.self) == "ab")
        #expect(counter.snapshot.inFlight == 0)
        #expect(counter.snapshot.succeeded == 1)

        let (lost, _) = try await client.stream(.get("/lost"))
        await #expect(throws: URLError.self) { _ = try await lost.collect(upTo: 10) }
        #expect(counter.snapshot.failed == 1)

        let (stopped, _) = try await client.stream(.get("/stopped"))
        stopped.cancel()
        #expect(counter.snapshot.cancelled == 1)
        #expect(counter.snapshot.inFlight == 0)
        #expect(client.lifecycle.inFlight == 0)
    }

    @Test(
        "hedging: a winner that does not stream never gets the streamed body of a losing attempt",
        .timeLimit(.minutes(1))
    )
    func hedgedWinnerKeepsItsOwnBody() async throws {
        let mock = MockTransport { request in
            guard request.callIndex == 0 else { return .status(503) }
            // The original answers 200 as it is cancelled: its body is left behind for the call.
            try? await waitForCancellation()
            return .status(200, body: "the loser's body")
        }
        let client = Client(baseURL: base, transport: mock, middleware: [.hedging(after: .zero)])
        let (body, response) = try await client.stream(URLRequest(url: base.appendingPathComponent("doc")))
        #expect(response.statusCode == 503)
        #expect(String(decoding: try await body.collect(upTo: 100), as: UTF8.self) == "")
        #expect(mock.callCount == 2)
    }

    @Test(
        "limitingConcurrency: a streamed call holds its permit until its head arrives, not while its body streams",
        .timeLimit(.minutes(1))
    )
    func limiterPermitEndsWithTheHead() async throws {
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/feed").replies(.stream([.text("a"), .hold(until: release), .text("b")]))
        }
        let limiter = ConcurrencyLimiter(maxInFlight: 1)
        let client = Client(baseURL: base, transport: mock, middleware: [.limitingConcurrency(limiter)])
        let (first, _) = try await client.stream(.get("/feed"))
        #expect(limiter.inFlight == 0)
        // A second stream opened before the first is read gets its head at once.
        let (second, _) = try await client.stream(.get("/feed"))
        #expect(limiter.waiting == 0)
        release.open()
        #expect(String(decoding: try await first.collect(upTo: 10), as: UTF8.self) == "ab")
        #expect(String(decoding: try await second.collect(upTo: 10), as: UTF8.self) == "ab")
    }

    @Test("caching: a streamed call is neither stored nor answered from the cache")
    func cachingPassesStreamsThrough() async throws {
        let mock = MockTransport {
            MockRoute.get("/doc").replies(.stream([.text("fresh")], headers: ["Cache-Control": "max-age=600"]))
        }
        let client = Client(baseURL: base, transport: mock, middleware: [.caching()])
        let (first, _) = try await client.stream(.get("/doc"))
        #expect(String(decoding: try await first.collect(upTo: 10), as: UTF8.self) == "fresh")
        // Had the empty head been stored, this buffered call would be answered from the cache with no body.
        let buffered: String = try await client.send(.get("/doc"))
        #expect(buffered == "fresh")
        #expect(mock.requests.count == 2)
        let (second, _) = try await client.stream(.get("/doc"))
        #expect(String(decoding: try await second.collect(upTo: 10), as: UTF8.self) == "fresh")
        #expect(mock.requests.count == 3, "a streamed call is not answered from the cache")
    }

    @Test("coalescing: concurrent streamed calls each get their own body", .timeLimit(.minutes(1)))
    func coalescingNeverSharesStreams() async throws {
        let arrived = Arrivals()
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/feed").replies(.stream([.text("x")]).held(until: release, counting: arrived))
        }
        let client = Client(baseURL: base, transport: mock, middleware: [.coalescing()])
        async let one = client.stream(.get("/feed"))
        async let two = client.stream(.get("/feed"))
        await arrived.wait(for: 2)
        release.open()
        let bodies = try await [one.body, two.body]
        for body in bodies {
            #expect(String(decoding: try await body.collect(upTo: 10), as: UTF8.self) == "x")
        }
        #expect(mock.requests.count == 2)
    }
}
