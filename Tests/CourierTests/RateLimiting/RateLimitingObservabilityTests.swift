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

    /// A partition that is a credential (a function that keys by API key, against the advice to hash it): each
    /// event about it, one with the credential registered as a secret.
    private static func secretPartitionEvents() -> (secret: String, events: [RateLimitEvent]) {
        let secret = "tenant-key-\(UUID().uuidString)"
        Redaction.registerSecret(secret)
        return (
            secret,
            [
                .waited(partition: secret, duration: .seconds(2)), .rejected(partition: secret, reason: .queueFull),
                .throttled(partition: secret, status: 429, retryAfter: nil),
                .updated(partition: secret, limit: 50, remaining: 7, resetIn: nil),
                .storeFailed(partition: secret, message: "down"),
            ]
        )
    }

    #if Metrics
    @Test("a partition that is a registered secret is redacted in the metric's dimension")
    func secretPartitionMetric() throws {
        let (secret, events) = Self.secretPartitionEvents()
        let factory = TestMetrics()
        let metrics = ClientMetrics(factory: factory)
        for event in events { metrics.recordRateLimit(event) }
        let remaining = try factory.expectGauge(
            ClientMetrics.Label.rateLimitRemaining,
            [("rate_limit.partition", Redaction.placeholder)]
        )
        #expect(remaining.lastValue == 7)
        #expect(throws: (any Error).self) {
            try factory.expectGauge(ClientMetrics.Label.rateLimitRemaining, [("rate_limit.partition", secret)])
        }
    }

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
    @Test("a partition that is a registered secret is redacted in every log entry's metadata")
    func secretPartitionLog() throws {
        let (secret, events) = Self.secretPartitionEvents()
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "rate-limit-tests") { _ in handler }
        logger.logLevel = .trace
        for event in events { event.log(to: logger) }
        #expect(handler.entries.count == events.count)
        #expect(handler.entries.allSatisfy { $0.metadata["rate_limit.partition"] == "\(Redaction.placeholder)" })
        #expect(!handler.entries.contains { "\($0.metadata)".contains(secret) })
    }

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
