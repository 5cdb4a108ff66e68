#if Metrics
import Courier
import CourierTesting
import Foundation
import Metrics
import MetricsTestKit
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Metrics (trait Metrics)")
struct MetricsTests {
    private let factory = TestMetrics()

    private func request(_ path: String, method: String = "GET", host: String = "api.example.test") -> URLRequest {
        var request = URLRequest(url: URL(string: "https://\(host)\(path)")!)
        request.httpMethod = method
        return request
    }

    /// The dimensions of a series: the method, `name: value`, and the host.
    private func dimensions(
        _ name: String,
        _ value: String,
        method: String = "GET",
        host: String = "api.example.test"
    ) -> [(String, String)] {
        [("http.request.method", method), (name, value), ("server.address", host)]
    }

    @Test("a response counts one request by method, status class and host, and records its duration")
    func response() async throws {
        let clock = ManualClock()
        let transport = MockTransport.taking(.milliseconds(150), on: clock)
        let client = Client(transport: transport, middleware: [.metrics(factory: factory, clock: clock)])

        _ = try await client.send(request("/users/42"))

        let dimensions = dimensions("http.response.status_class", "2xx")
        #expect(try factory.expectCounter("http.client.requests", dimensions).totalValue == 1)
        #expect(try factory.expectTimer("http.client.request.duration", dimensions).values == [150_000_000])
        #expect(factory.counters(label: "http.client.request.errors").isEmpty)
    }

    @Test(
        "the status class dimension groups status codes",
        arguments: [(201, "2xx"), (302, "3xx"), (404, "4xx"), (503, "5xx"), (101, "1xx")]
    )
    func statusClass(status: Int, statusClass: String) async throws {
        let client = Client(
            transport: MockTransport(.status(status)),
            middleware: [.metrics(factory: factory)]
        )

        _ = try await client.send(request("/x"))

        let counters = factory.counters(label: "http.client.requests")
        #expect(counters.count == 1)
        #expect(counters.first?.dimensions.first { $0.0 == "http.response.status_class" }?.1 == statusClass)
    }

    @Test("a request in flight is in the active-requests meter, and leaves it when it ends")
    func activeRequests() async throws {
        let arrived = Arrivals()
        let gate = Gate()
        let transport = MockTransport.held(by: gate, counting: arrived)
        let client = Client(transport: transport, middleware: [.metrics(factory: factory)])
        let meterDimensions = [("http.request.method", "GET"), ("server.address", "api.example.test")]

        async let first = client.send(request("/a"))
        async let second = client.send(request("/b"))
        await arrived.wait(for: 2)
        #expect(try factory.expectMeter("http.client.active_requests", meterDimensions).lastValue == 2)
        gate.open()
        _ = try await (first, second)

        #expect(try factory.expectMeter("http.client.active_requests", meterDimensions).lastValue == 0)
    }

    @Test("a transport failure counts as an error of type `transport` with the status class `error`")
    func transportFailure() async throws {
        let clock = ManualClock()
        let transport = MockTransport { _ in
            clock.advance(by: .milliseconds(20))
            throw URLError(.cannotConnectToHost)
        }
        let client = Client(transport: transport, middleware: [.metrics(factory: factory, clock: clock)])

        await #expect(throws: CourierError.self) { try await client.send(request("/x")) }

        let errors = try factory.expectCounter("http.client.request.errors", dimensions("error.type", "transport"))
        #expect(errors.totalValue == 1)
        let outcome = dimensions("http.response.status_class", "error")
        #expect(try factory.expectCounter("http.client.requests", outcome).totalValue == 1)
        #expect(try factory.expectTimer("http.client.request.duration", outcome).values == [20_000_000])
        let active = [("http.request.method", "GET"), ("server.address", "api.example.test")]
        #expect(try factory.expectMeter("http.client.active_requests", active).values == [1, 0])
    }

    @Test("an unacceptable-status error counts under its status class and its error code")
    func unacceptableStatus() async throws {
        let client = Client(
            transport: MockTransport(.status(404)),
            middleware: [.metrics(factory: factory), .validatingStatus()]
        )

        await #expect(throws: CourierError.self) { try await client.send(request("/missing")) }

        #expect(
            try factory.expectCounter("http.client.requests", dimensions("http.response.status_class", "4xx"))
                .totalValue == 1
        )
        #expect(
            try factory.expectCounter("http.client.request.errors", dimensions("error.type", "unacceptableStatus"))
                .totalValue == 1
        )
    }

    @Test("an error that is not a CourierError is reported by its type name, never by its text")
    func otherError() async throws {
        let client = Client(
            transport: MockTransport.ok,
            middleware: [.metrics(factory: factory), failing(quoting: "key sk_live_123 rejected")]
        )

        await #expect(throws: QuotingError.self) { try await client.send(request("/x")) }

        let errors = factory.counters(label: "http.client.request.errors")
        #expect(errors.count == 1)
        let errorType = try #require(errors.first?.dimensions.first { $0.0 == "error.type" }?.1)
        #expect(errorType.hasSuffix("QuotingError"))
        #expect(!errorType.contains("sk_live"))
    }

    @Test("a cancelled request counts under `cancelled` and not as an error", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let arrived = Arrivals()
        let client = Client(
            transport: MockTransport.hanging(counting: arrived),
            middleware: [.metrics(factory: factory)]
        )

        await expectCancellation(sending: request("/slow"), through: client, arrived: arrived)

        #expect(
            try factory.expectCounter("http.client.requests", dimensions("http.response.status_class", "cancelled"))
                .totalValue == 1
        )
        #expect(factory.counters(label: "http.client.request.errors").isEmpty)
    }

    @Test("a method HTTP does not define is reported as _OTHER")
    func unknownMethod() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.metrics(factory: factory)])

        _ = try await client.send(request("/x", method: "FROBNICATE"))

        let outcome = dimensions("http.response.status_class", "2xx", method: "_OTHER")
        #expect(try factory.expectCounter("http.client.requests", outcome).totalValue == 1)
    }

    @Test("hosts past the limit share the server address _OTHER")
    func hostLimit() async throws {
        let metrics = ClientMetrics(factory: factory, options: .init(maximumServerAddresses: 2))
        let client = Client(transport: MockTransport.ok, middleware: [.metrics(metrics)])

        for host in ["a.example.test", "b.example.test", "c.example.test", "d.example.test", "A.example.test"] {
            _ = try await client.send(request("/x", host: host))
        }

        let hosts = factory.counters(label: "http.client.requests").compactMap { counter in
            counter.dimensions.first { $0.0 == "server.address" }.map { ($0.1, counter.totalValue) }
        }
        #expect(
            Dictionary(uniqueKeysWithValues: hosts) == ["a.example.test": 2, "b.example.test": 1, "_OTHER": 2]
        )
    }

    @Test("without the server address, metrics carry only the method and the outcome")
    func withoutServerAddress() async throws {
        let client = Client(
            transport: MockTransport.ok,
            middleware: [.metrics(factory: factory, options: .init(includesServerAddress: false))]
        )

        _ = try await client.send(request("/x"))

        let counter = try factory.expectCounter(
            "http.client.requests",
            [("http.request.method", "GET"), ("http.response.status_class", "2xx")]
        )
        #expect(counter.totalValue == 1)
    }

    @Test("reportInFlight follows a request counter's in-flight value in a gauge", .timeLimit(.minutes(1)))
    func counterGauge() async throws {
        let recorded = AsyncStream.makeStream(of: Double.self)
        let factory = SignallingMetrics(recorded: recorded.continuation)
        let metrics = ClientMetrics(factory: factory)
        let counter = RequestCounter()
        let arrived = Arrivals()
        let gate = Gate()
        let transport = MockTransport.held(by: gate, counting: arrived)
        let client = Client(transport: transport, middleware: [.counting(counter)])
        let reporting = Task { await metrics.reportInFlight(of: counter, dimensions: [("client", "tests")]) }
        var values = recorded.stream.makeAsyncIterator()
        #expect(await values.next() == 0)

        async let first = client.send(request("/a"))
        async let second = client.send(request("/b"))
        await arrived.wait(for: 2)
        while let value = await values.next(), value < 2 {}
        gate.open()
        _ = try await (first, second)
        while let value = await values.next(), value > 0 {}

        let gauge = try factory.test.expectGauge("courier.requests.in_flight", [("client", "tests")])
        #expect(gauge.values.max() == 2)
        #expect(gauge.lastValue == 0)
        reporting.cancel()
        await reporting.join()
    }

    @Test("recordRetry counts retries by method and host")
    func retries() throws {
        let metrics = ClientMetrics(factory: factory)

        metrics.recordRetry(for: request("/x", method: "PUT"))
        metrics.recordRetry(for: request("/y", method: "PUT"))

        let retries = try factory.expectCounter(
            "http.client.request.retries",
            [("http.request.method", "PUT"), ("server.address", "api.example.test")]
        )
        #expect(retries.totalValue == 2)
    }

    @Test("countingRefreshes counts successful and failed refreshes, and passes results and errors through")
    func refreshes() async throws {
        struct RefreshRejected: Error {}
        let metrics = ClientMetrics(factory: factory)
        let succeeding = metrics.countingRefreshes { (old: String) in old + "-new" }
        let failing = metrics.countingRefreshes { (_: String) -> String in throw RefreshRejected() }

        #expect(try await succeeding("token") == "token-new")
        await #expect(throws: RefreshRejected.self) { try await failing("token") }
        await #expect(throws: RefreshRejected.self) { try await failing("token") }

        #expect(try factory.expectCounter("http.client.token.refreshes", [("outcome", "success")]).totalValue == 1)
        #expect(try factory.expectCounter("http.client.token.refreshes", [("outcome", "failure")]).totalValue == 2)
    }
}

/// `TestMetrics`, whose gauges also tell a stream each value they record, so a test can wait for a value
/// that another task records.
private final class SignallingMetrics: MetricsFactory {
    let test = TestMetrics()
    let recorded: AsyncStream<Double>.Continuation

    init(recorded: AsyncStream<Double>.Continuation) {
        self.recorded = recorded
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        test.makeCounter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        SignallingRecorder(
            base: test.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate),
            recorded: recorded
        )
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        test.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { test.destroyCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) { test.destroyTimer(handler) }
}

private final class SignallingRecorder: RecorderHandler {
    let base: any RecorderHandler
    let recorded: AsyncStream<Double>.Continuation

    init(base: any RecorderHandler, recorded: AsyncStream<Double>.Continuation) {
        self.base = base
        self.recorded = recorded
    }

    func record(_ value: Int64) {
        base.record(value)
        recorded.yield(Double(value))
    }

    func record(_ value: Double) {
        base.record(value)
        recorded.yield(value)
    }
}
#endif
