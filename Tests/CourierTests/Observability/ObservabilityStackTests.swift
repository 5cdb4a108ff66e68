#if Logging && Metrics && Tracing
import Courier
import CourierTesting
import Foundation
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("The observability layers in the recommended stack, around a real retry")
struct ObservabilityStackTests {
    private let url = URL(string: "https://api.example.test/users/42")!

    @Test("a call retried twice is one request in the metrics and the log, three spans, and two counted retries")
    func retriedCall() async throws {
        let factory = TestMetrics()
        let metrics = ClientMetrics(factory: factory)
        let logs = InMemoryLogHandler()
        let tracer = InMemoryTracer()
        var policy = RetryPolicy(backoff: .immediate, budget: nil)
        policy.onRetry = { event in metrics.recordRetry(for: event.request) }
        let client = Client(
            transport: MockTransport(.status(503), then: .status(503), .ok),
            middleware: [
                .metrics(metrics),
                .logging(logger: Logger(label: "tests") { _ in logs }),
                .retry(policy),
                .tracing(tracer: tracer),
                .validatingStatus(),
            ]
        )

        _ = try await client.send(URLRequest(url: url))

        let series = [("http.request.method", "GET"), ("server.address", "api.example.test")]
        let ok = [series[0], ("http.response.status_class", "2xx"), series[1]]
        #expect(try factory.expectCounter("http.client.requests", ok).totalValue == 1)
        #expect(factory.counters(label: "http.client.requests").count == 1)
        #expect(try factory.expectCounter("http.client.request.retries", series).totalValue == 2)

        #expect(logs.entries.map(\.message) == ["HTTP request completed"])
        #expect(logs.entries.first?.metadata["attempt"] == nil)

        let spans = tracer.finishedSpans
        #expect(spans.map { $0.attributes.get("http.request.resend_count") } == [nil, .int64(1), .int64(2)])
        #expect(
            spans.map { $0.attributes.get("http.response.status_code") } == [.int64(503), .int64(503), .int64(200)]
        )
        #expect(
            spans.map { $0.attributes.get("error.type") } == [
                .string("unacceptableStatus"), .string("unacceptableStatus"), nil,
            ]
        )
        #expect(spans.map(\.status?.code) == [.error, .error, nil])
    }

    @Test("logging inside the retry writes one entry per attempt, each with its number")
    func loggingPerAttempt() async throws {
        let logs = InMemoryLogHandler()
        let client = Client(
            transport: MockTransport(.status(503), then: .ok),
            middleware: [
                .retry(RetryPolicy(backoff: .immediate, budget: nil)),
                .logging(logger: Logger(label: "tests") { _ in logs }),
                .validatingStatus(),
            ]
        )

        _ = try await client.send(URLRequest(url: url))

        #expect(logs.entries.map(\.message) == ["HTTP request failed", "HTTP request completed"])
        #expect(logs.entries.map { $0.metadata["attempt"] } == ["1", "2"])
    }
}
#endif
