#if Tracing
import Courier
import CourierTesting
import Foundation
import InMemoryTracing
import Testing
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Tracing (trait Tracing)")
struct TracingTests {
    private let tracer = InMemoryTracer()

    private func attribute(_ span: FinishedInMemorySpan, _ name: String) -> SpanAttribute? {
        span.attributes.get(name)
    }

    @Test("a request gets one client span named after its method, with HTTP attributes and a redacted URL")
    func clientSpan() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://user:pw@api.example.test:8443/users/42?token=s3cr3t&page=2"))

        let span = try #require(tracer.finishedSpans.only)
        #expect(span.operationName == "GET")
        #expect(span.kind == .client)
        #expect(attribute(span, "http.request.method") == .string("GET"))
        #expect(attribute(span, "server.address") == .string("api.example.test"))
        #expect(attribute(span, "server.port") == .int64(8443))
        #expect(attribute(span, "http.response.status_code") == .int64(200))
        #expect(attribute(span, "error.type") == nil)
        #expect(span.status == nil)
        #expect(span.errors.isEmpty)
        guard case .string(let url) = attribute(span, "url.full") else {
            Issue.record("url.full is missing")
            return
        }
        #expect(!url.contains("s3cr3t"))
        #expect(!url.contains("pw"))
        #expect(url.contains("page=2"))
        #expect(tracer.activeSpans.isEmpty)
    }

    @Test("the port defaults from the scheme")
    func defaultPort() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))
        _ = try await client.send(urlRequest("http://api.example.test/x"))

        #expect(tracer.finishedSpans.map { attribute($0, "server.port") } == [.int64(443), .int64(80)])
    }

    @Test("the span's context is injected into the outgoing request's headers")
    func injection() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        let span = try #require(tracer.finishedSpans.only)
        let sent = try #require(transport.requests.only)
        #expect(sent.value(forHTTPHeaderField: InMemoryTracer.traceIDKey) == span.traceID)
        #expect(sent.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) == span.spanID)
    }

    @Test("a W3C instrument's traceparent reaches the transport")
    func traceparent() async throws {
        let tracer = W3CTracer()
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        let span = try #require(tracer.spans.finishedSpans.only)
        let sent = try #require(transport.requests.only)
        #expect(sent.value(forHTTPHeaderField: "traceparent") == "00-\(span.traceID)-\(span.spanID)-01")
    }

    @Test("the span is a child of the caller's current span")
    func parentFromTask() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer)])

        try await tracer.withSpan("handle request", ofKind: .server) { _ in
            _ = try await client.send(urlRequest("https://api.example.test/x"))
        }

        let spans = tracer.finishedSpans
        let parent = try #require(spans.first { $0.operationName == "handle request" })
        let child = try #require(spans.first { $0.operationName == "GET" })
        #expect(child.traceID == parent.traceID)
        #expect(child.parentSpanID == parent.spanID)
    }

    @Test("an outer internal span covers the call, and each attempt below it gets a client span of its own")
    func spanPerAttempt() async throws {
        let transport = MockTransport(.serverError, then: .ok)
        let retryOnce = Middleware(name: "retry-once") { request, next in
            let (data, response) = try await next(request)
            guard response.statusCode >= 500 else { return (data, response) }
            return try await next(request)
        }
        let client = Client(
            transport: transport,
            middleware: [.tracing(tracer: tracer, kind: .internal), retryOnce, .tracing(tracer: tracer)]
        )

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        let spans = tracer.finishedSpans
        let call = try #require(spans.first { $0.kind == .internal })
        let attempts = spans.filter { $0.kind == .client }
        #expect(attempts.count == 2)
        #expect(attempts.allSatisfy { $0.parentSpanID == call.spanID && $0.traceID == call.traceID })
        #expect(attempts.map { attribute($0, "http.response.status_code") } == [.int64(500), .int64(200)])
        #expect(attempts.map(\.status?.code) == [.error, nil])
        #expect(call.status == nil)
        // Each attempt propagates its own span, not the call's.
        let sentSpanIDs = transport.requests.map { $0.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) }
        #expect(sentSpanIDs == attempts.map(\.spanID))
    }

    @Test("inside a retry layer, a retried attempt's span carries http.request.resend_count")
    func resendCount() async throws {
        let threeAttempts = Middleware(name: "three-attempts") { request, next in
            var last: (Data, HTTPURLResponse)?
            for attempt in 1...3 {
                let context = RetryContext(attempt: attempt, maximumAttempts: 3)
                last = try await RetryContext.$current.withValue(context) { try await next(request) }
            }
            return try #require(last)
        }
        let client = Client(transport: MockTransport.ok, middleware: [threeAttempts, .tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        #expect(
            tracer.finishedSpans.map { attribute($0, "http.request.resend_count") } == [nil, .int64(1), .int64(2)]
        )
    }

    @Test("a response of 400 or more sets the error status and error.type to the status code")
    func errorStatus() async throws {
        let client = Client(transport: MockTransport(.status(503)), middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        let span = try #require(tracer.finishedSpans.only)
        #expect(span.status?.code == .error)
        #expect(attribute(span, "error.type") == .string("503"))
        #expect(attribute(span, "http.response.status_code") == .int64(503))
    }

    @Test("a CourierError is recorded, sets the error status, and names its code in error.type")
    func courierError() async throws {
        let transport = MockTransport { _ in throw URLError(.timedOut) }
        let client = Client(transport: transport, middleware: [.tracing(tracer: tracer)])

        await #expect(throws: CourierError.self) { try await client.send(urlRequest("https://api.example.test/x")) }

        let span = try #require(tracer.finishedSpans.only)
        #expect(span.status?.code == .error)
        #expect(attribute(span, "error.type") == .string("transport"))
        let recorded = try #require(span.errors.only)
        #expect((recorded.error as? CourierError)?.code == .transport)
    }

    @Test("another error is recorded as a redacted copy, by its type name")
    func otherErrorIsRedacted() async throws {
        let failing = failing(quoting: "rejected Authorization: Bearer abcdef123456")
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer), failing])

        await #expect(throws: QuotingError.self) { try await client.send(urlRequest("https://api.example.test/x")) }

        let span = try #require(tracer.finishedSpans.only)
        let recorded = try #require(span.errors.only)
        let text = String(describing: recorded.error)
        #expect(text.contains("QuotingError"))
        #expect(!text.contains("abcdef123456"))
        #expect(span.status?.message?.contains("abcdef123456") == false)
        guard case .string(let errorType) = attribute(span, "error.type") else {
            Issue.record("error.type is missing")
            return
        }
        #expect(errorType.hasSuffix("QuotingError"))
    }

    @Test("cancellation ends the span with a cancelled event and no error", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let arrived = Arrivals()
        let client = Client(transport: MockTransport.hanging(counting: arrived), middleware: [.tracing(tracer: tracer)])

        await expectCancellation(
            sending: urlRequest("https://api.example.test/slow"),
            through: client,
            arrived: arrived
        )

        let span = try #require(tracer.finishedSpans.only)
        #expect(span.events.map(\.name) == ["cancelled"])
        #expect(span.errors.isEmpty)
        #expect(span.status == nil)
        #expect(tracer.activeSpans.isEmpty)
    }

    @Test("a method HTTP does not define names the span HTTP and keeps the original method")
    func unknownMethod() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer)])

        _ = try await client.send(urlRequest("https://api.example.test/x", method: "FROBNICATE"))

        let span = try #require(tracer.finishedSpans.only)
        #expect(span.operationName == "HTTP")
        #expect(attribute(span, "http.request.method") == .string("_OTHER"))
        #expect(attribute(span, "http.request.method_original") == .string("FROBNICATE"))
    }

    @Test("a method that is not an HTTP token is not copied into the span")
    func invalidMethod() async throws {
        let client = Client(transport: MockTransport.ok, middleware: [.tracing(tracer: tracer)])

        await #expect(throws: CourierError.self) {
            try await client.send(urlRequest("https://api.example.test/x", method: "GET\r\nX-Injected: 1"))
        }

        let span = try #require(tracer.finishedSpans.only)
        #expect(attribute(span, "http.request.method") == .string("_OTHER"))
        #expect(attribute(span, "http.request.method_original") == .string("<invalid method>"))
    }

    @Test("tracing() uses the tracer bound to the task, read for each request")
    func taskTracer() async throws {
        let first = InMemoryTracer()
        let second = InMemoryTracer()
        let client = Client(transport: MockTransport.ok, middleware: [.tracing()])

        try await withTracer(first) { _ = try await client.send(urlRequest("https://api.example.test/a")) }
        try await withTracer(second) { _ = try await client.send(urlRequest("https://api.example.test/b")) }

        #expect(first.finishedSpans.count == 1)
        #expect(second.finishedSpans.count == 1)
    }
}

extension Array {
    /// The only element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}

/// A tracer that keeps spans in memory like `InMemoryTracer` and propagates them as W3C `traceparent`
/// headers, as an OpenTelemetry tracer does.
private struct W3CTracer: Tracer {
    let spans = InMemoryTracer(
        idGenerator: .init(
            nextTraceID: { "4bf92f3577b34da6a3ce929d0e0e4736" },
            nextSpanID: { "00f067aa0ba902b7" }
        )
    )

    func startSpan<Instant: TracerInstant>(
        _ operationName: String,
        context: @autoclosure () -> InstrumentationContext,
        ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant,
        function: String,
        file fileID: String,
        line: UInt
    ) -> InMemorySpan {
        spans.startSpan(
            operationName,
            context: context(),
            ofKind: kind,
            at: instant(),
            function: function,
            file: fileID,
            line: line
        )
    }

    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier,
        into context: inout InstrumentationContext,
        using extractor: Extract
    ) where Carrier == Extract.Carrier {}

    func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext,
        into carrier: inout Carrier,
        using injector: Inject
    ) where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }
}
#endif
