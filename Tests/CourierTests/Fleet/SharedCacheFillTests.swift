import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A store that answers `beginFill` from a script (`nil`, "fetch", once the script is used up) and records
/// every fill call; `duringWait` runs inside `waitForFill` (given its timeout), as another replica's fetch would,
/// and `duringBegin` inside `beginFill`.
private final class ScriptedFillStore: HTTPCacheStore {
    let inner = InMemoryHTTPCacheStore()
    private let script: Locked<[Duration?]>
    private let failBegin: Bool
    private let duringWait: @Sendable (Duration) async throws -> Void
    private let duringBegin: @Sendable () async throws -> Void
    let calls = Locked<[String]>([])
    /// The holders named to beginFill and endFill, in order.
    let holders = Locked<[String]>([])
    /// How many responses were stored when endFill was called.
    let storedAtEnd = Locked<[Int]>([])

    init(
        _ script: [Duration?],
        coordinates: Bool = true,
        failBegin: Bool = false,
        duringBegin: @escaping @Sendable () async throws -> Void = {},
        duringWait: @escaping @Sendable (Duration) async throws -> Void = { _ in }
    ) {
        self.script = Locked(script)
        self.coordinatesFills = coordinates
        self.failBegin = failBegin
        self.duringBegin = duringBegin
        self.duringWait = duringWait
    }

    let coordinatesFills: Bool

    func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] { try await inner.responses(for: key) }
    func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {
        try await inner.store(response, for: key)
    }
    func removeResponses(forResource resource: String) async throws {
        try await inner.removeResponses(forResource: resource)
    }

    func beginFill(for key: HTTPCacheKey, holder: String) async throws -> Duration? {
        calls.withLock { $0.append("begin") }
        holders.withLock { $0.append(holder) }
        if failBegin { throw CourierError(.transport, message: "the database is down") }
        try await duringBegin()
        return script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func endFill(for key: HTTPCacheKey, holder: String) async throws {
        calls.withLock { $0.append("end") }
        holders.withLock { $0.append(holder) }
        storedAtEnd.withLock { $0.append(inner.count) }
    }

    func waitForFill(of key: HTTPCacheKey, timeout: Duration) async throws {
        calls.withLock { $0.append("wait \(timeout)") }
        try await duringWait(timeout)
    }
}

@Suite("A shared cache's fills: one process fetches, the others wait for what it stores", .timeLimit(.minutes(1)))
struct SharedCacheFillTests {
    private static let url = URL(string: "https://api.example.test/report")!

    private func origin(_ body: String) -> MockTransport {
        MockTransport { _ in .status(200, body: body, headers: ["Cache-Control": "public, max-age=60"]) }
    }

    private func client(
        _ store: some HTTPCacheStore,
        _ transport: MockTransport,
        events: Locked<[String]>,
        clock: ManualClock = ManualClock()
    ) -> Client {
        let cache = HTTPCache(
            store: store,
            clock: clock,
            onEvent: { event in events.withLock { $0.append(event.kind.rawValue) } }
        )
        return Client(transport: transport, middleware: [.caching(cache)])
    }

    @Test("The holder fetches, stores, then ends the fill under the name it began it with")
    func holderFetches() async throws {
        let store = ScriptedFillStore([nil])
        let transport = origin("fresh")
        let events = Locked<[String]>([])
        let (body, _) = try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        #expect(String(decoding: body, as: UTF8.self) == "fresh")
        #expect(store.calls.value == ["begin", "end"])
        #expect(Set(store.holders.value).count == 1)
        #expect(store.holders.value.count == 2)
        #expect(store.storedAtEnd.value == [1], "ended after storing")
        #expect(events.value == ["miss", "stored"])
        #expect(transport.callCount == 1)
    }

    @Test("Another replica holds the fill: this one waits, then serves what it stored without asking the server")
    func waiterServesWhatTheHolderStored() async throws {
        let other = origin("from the other replica")
        let otherEvents = Locked<[String]>([])
        let shared = Locked<ScriptedFillStore?>(nil)
        let store = ScriptedFillStore(
            [.seconds(5)],
            duringWait: { _ in
                // The other replica shares the store's responses, and fetches without coordinating.
                let store = try #require(shared.value)
                _ = try await client(store.inner, other, events: otherEvents).send(URLRequest(url: Self.url))
            }
        )
        shared.withLock { $0 = store }
        let transport = origin("from this replica")
        let events = Locked<[String]>([])
        let (body, _) = try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        #expect(String(decoding: body, as: UTF8.self) == "from the other replica")
        #expect(transport.callCount == 0)
        #expect(other.callCount == 1)
        #expect(store.calls.value == ["begin", "wait 5.0 seconds"])
        #expect(events.value == ["hit"])
    }

    @Test("Another replica stored the response between this one's lookup and its fill: it is read under the fill")
    func readAgainUnderTheFill() async throws {
        let other = origin("from the other replica")
        let shared = Locked<ScriptedFillStore?>(nil)
        let store = ScriptedFillStore(
            [nil],
            duringBegin: {
                let store = try #require(shared.value)
                _ = try await client(store.inner, other, events: Locked([])).send(URLRequest(url: Self.url))
            }
        )
        shared.withLock { $0 = store }
        let transport = origin("from this replica")
        let events = Locked<[String]>([])
        let (body, _) = try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        #expect(String(decoding: body, as: UTF8.self) == "from the other replica")
        #expect(transport.callCount == 0)
        #expect(store.calls.value == ["begin", "end"])
        #expect(events.value == ["hit"])
    }

    @Test("A wait that ran to its end (the holder may have died): it asks again, and fetches as the holder")
    func asksAgainAfterTheLease() async throws {
        let clock = ManualClock()
        let store = ScriptedFillStore([.seconds(1), nil], duringWait: { timeout in clock.advance(by: timeout) })
        let transport = origin("mine")
        _ = try await client(store, transport, events: Locked([]), clock: clock).send(URLRequest(url: Self.url))
        #expect(store.calls.value == ["begin", "wait 1.0 seconds", "begin", "end"])
        let holders = store.holders.value
        #expect(holders.count == 3 && holders[1] == holders[2])
        #expect(transport.callCount == 1)
    }

    @Test("Woken by a holder that stored nothing fresh: it fetches at once, without queueing for the fill again")
    func wokenWithNothingStored() async throws {
        let clock = ManualClock()
        let store = ScriptedFillStore([.seconds(5), nil], duringWait: { _ in clock.advance(by: .seconds(1)) })
        let transport = origin("mine")
        let events = Locked<[String]>([])
        _ = try await client(store, transport, events: events, clock: clock).send(URLRequest(url: Self.url))
        #expect(store.calls.value == ["begin", "wait 5.0 seconds"])
        #expect(transport.callCount == 1)
        #expect(events.value == ["miss", "stored"])
    }

    @Test("A fill held through two whole waits: the cache fetches without it rather than wait any longer")
    func fetchesAfterTwoWaits() async throws {
        let clock = ManualClock()
        let store = ScriptedFillStore(
            [.seconds(1), .seconds(2)],
            duringWait: { timeout in clock.advance(by: timeout) }
        )
        let transport = origin("mine")
        let events = Locked<[String]>([])
        _ = try await client(store, transport, events: events, clock: clock).send(URLRequest(url: Self.url))
        #expect(store.calls.value == ["begin", "wait 1.0 seconds", "begin", "wait 2.0 seconds"])
        #expect(transport.callCount == 1)
        #expect(events.value == ["miss", "stored"])
    }

    @Test("The store fails to begin a fill: storeFailed, and the cache fetches as without coordination")
    func beginFails() async throws {
        let store = ScriptedFillStore([], failBegin: true)
        let transport = origin("mine")
        let events = Locked<[String]>([])
        _ = try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        #expect(store.calls.value == ["begin"])
        #expect(events.value == ["storeFailed", "miss", "stored"])
        #expect(transport.callCount == 1)
    }

    @Test("The server fails while this replica holds the fill: the fill is ended all the same")
    func fillEndedOnError() async throws {
        let store = ScriptedFillStore([nil])
        let transport = MockTransport(.failure(URLError(.timedOut)))
        let events = Locked<[String]>([])
        await #expect(throws: (any Error).self) {
            try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        }
        #expect(store.calls.value == ["begin", "end"])
    }

    @Test("A store that does not coordinate fills is asked nothing about them")
    func storeWithoutFills() async throws {
        let store = ScriptedFillStore([.seconds(5)], coordinates: false)
        let transport = origin("mine")
        let events = Locked<[String]>([])
        _ = try await client(store, transport, events: events).send(URLRequest(url: Self.url))
        #expect(store.calls.value == [])
        #expect(events.value == ["miss", "stored"])
        #expect(transport.callCount == 1)
    }

    @Test("A request that refuses stored responses (no-cache, max-age=0) neither waits nor takes a fill")
    func noCacheDoesNotCoordinate() async throws {
        for directive in ["no-cache", "max-age=0"] {
            let store = ScriptedFillStore([.seconds(5)])
            let transport = origin("mine")
            var request = URLRequest(url: Self.url)
            request.setValue(directive, forHTTPHeaderField: "Cache-Control")
            _ = try await client(store, transport, events: Locked([])).send(request)
            #expect(store.calls.value == [], "\(directive)")
            #expect(transport.callCount == 1)
        }
    }
}
