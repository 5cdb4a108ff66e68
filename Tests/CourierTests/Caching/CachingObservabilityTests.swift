import Courier
import CourierTesting
import Foundation
import Testing

#if Metrics
import Metrics
import MetricsTestKit
#endif

#if Logging
import InMemoryLogging
import Logging
#endif

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("HTTP cache events in metrics and logs (traits Metrics, Logging)")
struct CachingObservabilityTests {
    private let url = URL(string: "https://api.example.test/items?api_key=k3y-s3cr3t")!

    /// A miss that is stored, then a hit, through a cache reporting to `onEvent`.
    private func missThenHit(_ onEvent: @escaping @Sendable (CacheEvent) -> Void) async throws {
        let transport = MockTransport(.status(200, body: "x", headers: ["Cache-Control": "max-age=60"]))
        let client = Client(
            transport: transport,
            middleware: [.caching(HTTPCache(clock: ManualClock(), onEvent: onEvent))]
        )
        for _ in 0..<2 { _ = try await client.send(URLRequest(url: url)) }
    }

    #if Metrics
    @Test("ClientMetrics counts cache events by kind and method")
    func metrics() async throws {
        let factory = TestMetrics()
        let metrics = ClientMetrics(factory: factory)
        try await missThenHit(metrics.recordCacheEvent)
        for kind in ["miss", "stored", "hit"] {
            let counter = try factory.expectCounter(
                ClientMetrics.Label.cacheEvents,
                [("cache.event", kind), ("http.request.method", "GET")]
            )
            #expect(counter.totalValue == 1)
        }
        #expect(factory.counters(label: ClientMetrics.Label.cacheEvents).count == 3)
    }
    #endif

    #if Logging
    @Test("CacheEvent.logging writes one entry per event, with the URL redacted")
    func logging() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "cache-tests") { _ in handler }
        logger.logLevel = .trace
        try await missThenHit(CacheEvent.logging(to: logger))
        #expect(
            handler.entries.map(\.message.description) == ["HTTP cache miss", "HTTP cache stored", "HTTP cache hit"]
        )
        #expect(handler.entries.allSatisfy { $0.level == .debug })
        let entry = try #require(handler.entries.last)
        #expect(entry.metadata["cache.event"] == "hit")
        #expect(entry.metadata["http.request.method"] == "GET")
        #expect(entry.metadata["url.full"] == "https://api.example.test/items?api_key=REDACTED")
    }
    #endif
}
