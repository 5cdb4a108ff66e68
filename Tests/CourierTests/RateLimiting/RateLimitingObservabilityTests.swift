#if Metrics || Logging
import Courier
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

@Suite("Rate limiting: metrics and logs (traits Metrics, Logging)")
struct RateLimitingObservabilityTests {
    private static let events: [RateLimitEvent] = [
        .waited(partition: "api.example.test:443", duration: .seconds(2)),
        .rejected(partition: "api.example.test:443", reason: .queueFull),
        .throttled(partition: "api.example.test:443", status: 429, retryAfter: .seconds(30)),
        .updated(partition: "api.example.test:443", limit: 50, remaining: 7, resetIn: .seconds(12)),
        .storeFailed(partition: "api.example.test:443", message: "connection refused"),
    ]

    #if Metrics
    @Test("recordRateLimit records waits, refusals by reason, 429s by status, and what is left per partition")
    func metrics() throws {
        let factory = TestMetrics()
        let metrics = ClientMetrics(factory: factory)
        for event in Self.events { metrics.recordRateLimit(event) }

        #expect(try factory.expectTimer(ClientMetrics.Label.rateLimitWaits, []).values == [2_000_000_000])
        let rejections = try factory.expectCounter(ClientMetrics.Label.rateLimitRejections, [("reason", "queueFull")])
        #expect(rejections.totalValue == 1)
        let throttled = try factory.expectCounter(
            ClientMetrics.Label.rateLimitThrottled,
            [("http.response.status_code", "429")]
        )
        #expect(throttled.totalValue == 1)
        let remaining = try factory.expectGauge(
            ClientMetrics.Label.rateLimitRemaining,
            [("rate_limit.partition", "api.example.test:443")]
        )
        #expect(remaining.lastValue == 7)
        #expect(try factory.expectCounter(ClientMetrics.Label.rateLimitStoreFailures, []).totalValue == 1)
    }
    #endif

    #if Logging
    @Test("log(to:) writes one entry per event, at debug, warning and notice, with the facts as metadata")
    func logging() throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "rate-limit-tests") { _ in handler }
        logger.logLevel = .trace
        for event in Self.events { event.log(to: logger) }

        let entries = handler.entries
        try #require(entries.map(\.level) == [.debug, .warning, .notice, .debug, .warning])
        #expect(
            entries.map(\.message.description) == [
                "Rate limit wait", "Rate limit refused a request", "Rate limited by the server", "Rate limit updated",
                "Rate limit store failed; pacing without the shared limit for one window",
            ]
        )
        #expect(entries.allSatisfy { $0.metadata["rate_limit.partition"] == "api.example.test:443" })
        #expect(entries[0].metadata["duration_ms"] == "2000.0")
        #expect(entries[1].metadata["reason"] == "queueFull")
        #expect(entries[2].metadata["http.status_code"] == "429")
        #expect(entries[2].metadata["retry_after_ms"] == "30000.0")
        #expect(entries[3].metadata["remaining"] == "7")
        #expect(entries[3].metadata["limit"] == "50")
        #expect(entries[3].metadata["reset_in_ms"] == "12000.0")
        #expect(entries[4].metadata["error"] == "connection refused")
    }
    #endif
}
#endif
