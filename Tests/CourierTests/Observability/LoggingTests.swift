import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("logging")
struct LoggingTests {
    /// The records ``sink`` keeps.
    private let records = Locked<[LogRecord]>([])
    /// A sink that keeps every record, for assertions.
    private let sink: LogSink

    init() {
        sink = LogSink { [records] record in records.withLock { $0.append(record) } }
    }

    private struct Boom: Error, CustomStringConvertible {
        var description: String { "boom with Bearer s3cr3t-bearer-token" }
    }

    @Test("a response is logged once with method, redacted URL, status and the virtual duration")
    func logsResponse() async throws {
        let clock = ManualClock()
        let transport = MockTransport.taking(.milliseconds(42), on: clock, .status(201))
        let client = makeClient(transport, [.logging(to: sink, clock: clock)])
        var request = URLRequest(url: testURL)
        request.httpMethod = "POST"
        _ = try await client.send(request)

        let record = try #require(records.value.only)
        #expect(record.event == .completed)
        #expect(record.level == .info)
        #expect(record.method == "POST")
        #expect(record.url == testURL.absoluteString)
        #expect(record.statusCode == 201)
        #expect(record.duration == .milliseconds(42))
        #expect(record.errorCode == nil)
        #expect(record.requestHeaders == nil)
        #expect(record.call == CallSummary(waitingForHead: .milliseconds(42)))
        #expect(record.description == "[info] POST \(testURL.absoluteString) → 201 (42.0 ms; head 42.0 ms)")
    }

    @Test("a response with an error status is logged at the error-status level")
    func errorStatusLevel() async throws {
        let client = makeClient(MockTransport(.status(404)), [.logging(to: sink)])
        _ = try await client.send(URLRequest(url: testURL))
        let record = try #require(records.value.only)
        #expect(record.level == .warning)
        #expect(record.statusCode == 404)
    }

    @Test("a failure is logged with its code, status and middleware, and passed on unchanged")
    func logsFailure() async throws {
        let clock = ManualClock()
        let transport = MockTransport.taking(.seconds(2), on: clock, .status(503, body: "try later"))
        let client = makeClient(transport, [.logging(to: sink, clock: clock), .validatingStatus()])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .unacceptableStatus)
        #expect(error.middleware == "validatingStatus")

        let record = try #require(records.value.only)
        #expect(record.event == .failed)
        #expect(record.level == .error)
        #expect(record.errorCode == .unacceptableStatus)
        #expect(record.middleware == "validatingStatus")
        #expect(record.statusCode == 503)
        #expect(record.duration == .seconds(2))
        #expect(record.bodyPreview == nil)
        #expect(record.description.contains("failed: unacceptableStatus"))
        #expect(record.description.contains("[middleware: validatingStatus]"))
    }

    @Test("an error that is not a CourierError is logged by type and redacted message")
    func logsForeignError() async throws {
        let client = makeClient(MockTransport.ok, [.logging(to: sink), Middleware { _, _ in throw Boom() }])
        await #expect(throws: Boom.self) { try await client.send(URLRequest(url: testURL)) }
        let record = try #require(records.value.only)
        #expect(record.event == .failed)
        #expect(record.errorCode == nil)
        #expect(record.error?.hasPrefix("Boom: boom with Bearer") == true)
        expectNoSecrets(record.description)
    }

    @Test("a cancelled request is logged as cancelled and stays a CancellationError", .timeLimit(.minutes(1)))
    func logsCancellation() async throws {
        let arrived = Arrivals()
        let transport = MockTransport.hanging(counting: arrived)
        let client = makeClient(transport, [.logging(to: sink)])
        await expectCancellation(sending: URLRequest(url: testURL), through: client, arrived: arrived)
        let record = try #require(records.value.only)
        #expect(record.event == .cancelled)
        #expect(record.level == .info)
        #expect(record.errorCode == nil)
    }

    @Test("with a start level, a record is made before the request goes on")
    func logsStart() async throws {
        let transport = MockTransport { _ in
            // The start record must already be there when the transport runs.
            #expect(records.value.map(\.event) == [.started])
            return .ok
        }
        let client = makeClient(transport, [.logging(to: sink, startLevel: .debug)])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(records.value.map(\.event) == [.started, .completed])
        #expect(records.value.first?.level == .debug)
        #expect(records.value.first?.duration == nil)
    }

    @Test("a request with a method that is not a token is logged without it, so it cannot forge log lines")
    func invalidMethodNotLogged() async throws {
        let client = makeClient(MockTransport.ok, [.logging(to: sink, startLevel: .debug)])
        var request = URLRequest(url: testURL)
        request.httpMethod = "GET\r\n[critical] forged line"
        await #expect(throws: CourierError.self) { try await client.send(request) }
        let logged = records.value
        #expect(logged.map(\.event) == [.started, .failed])
        for record in logged {
            #expect(!record.method.contains("forged"))
            #expect(!record.description.contains("\n") && !record.description.contains("\r"))
        }
    }

    @Test("records below the sink's level are not delivered")
    func respectsSinkLevel() async throws {
        var sink = sink
        sink.minimumLevel = .warning
        let client = makeClient(
            MockTransport(.ok, then: .status(500)),
            [.logging(to: sink, startLevel: .debug)]
        )
        _ = try await client.send(URLRequest(url: testURL))
        _ = try await client.send(URLRequest(url: testURL))
        #expect(records.value.map(\.statusCode) == [500])
    }

    @Test("a sink passes on only the records at or above its minimum level")
    func sinkLevel() {
        let sink = LogSink(minimumLevel: .warning) { [records] record in records.withLock { $0.append(record) } }
        for level in [LogRecord.Level.info, .warning, .critical] {
            sink.log(LogRecord(level: level, event: .completed, method: "GET", url: "/"))
        }
        #expect(records.value.map(\.level) == [.warning, .critical])
    }

    @Test("with headers and body previews on, no secret appears in any record, though the header names do")
    func noSecretsInRecords() async throws {
        let response = MockResponse(
            status: 200,
            headers: secretLadenResponseHeaders,
            body: Data(secretLadenResponseBody.utf8)
        )
        let failing = MockResponse(
            status: 401,
            headers: secretLadenResponseHeaders,
            body: Data(secretLadenResponseBody.utf8)
        )
        let client = makeClient(
            MockTransport(response, then: failing),
            [
                .logging(to: sink, startLevel: .debug, includesHeaders: true, includesBodyPreview: true),
                .validatingStatus(),
            ]
        )
        _ = try await client.send(secretLadenRequest())
        await #expect(throws: CourierError.self) { try await client.send(secretLadenRequest()) }

        let records = records.value
        try #require(records.map(\.event) == [.started, .completed, .started, .failed])
        for record in records {
            expectNoSecrets(record.description)
            expectNoSecrets(record.message)
            expectNoSecrets(record.metadata.description)
            expectNoSecrets(String(reflecting: record))
            #expect(record.description.contains("Authorization: <redacted>"))
            #expect(record.description.contains("Cookie: <redacted>"))
            #expect(record.description.contains("Proxy-Authorization: <redacted>"))
            #expect(record.description.contains("User-Agent: courier-tests"))
        }
        let completed = records[1]
        #expect(completed.responseHeaders?["Set-Cookie"] == Redaction.placeholder)
        #expect(completed.responseHeaders?["X-Trace"] == "abc")
        #expect(completed.bodyPreview?.contains("note") == true)
        #expect(records[3].bodyPreview?.contains("note") == true)
        #expect(records[3].responseHeaders?["Set-Cookie"] == Redaction.placeholder)
    }

    @Test("metadata holds the record's facts under stable keys")
    func metadata() {
        let record = LogRecord(
            level: .error,
            event: .failed,
            method: "GET",
            url: "https://api.example.test/x",
            statusCode: 500,
            duration: .microseconds(1_250),
            errorCode: .unacceptableStatus,
            error: "the status 500 is not acceptable",
            middleware: "validatingStatus",
            requestHeaders: ["Accept": "application/json"],
            responseHeaders: ["Retry-After": "3"],
            bodyPreview: "oops"
        )
        #expect(
            record.metadata == [
                "event": "failed",
                "http.method": "GET",
                "http.url": "https://api.example.test/x",
                "http.status_code": "500",
                "duration_ms": "1.2",
                "error.code": "unacceptableStatus",
                "error": "the status 500 is not acceptable",
                "middleware": "validatingStatus",
                "http.request.header.accept": "application/json",
                "http.response.header.retry-after": "3",
                "http.response.body_preview": "oops",
            ]
        )
        #expect(
            record.description
                == "[error] GET https://api.example.test/x failed: unacceptableStatus (status 500) (1.2 ms):"
                + " the status 500 is not acceptable [middleware: validatingStatus];"
                + " request headers: [Accept: application/json]; response headers: [Retry-After: 3]; body: oops"
        )
    }

    @Test(
        "durations print in milliseconds with one decimal",
        arguments: [
            (Duration.zero, "0.0"),
            (.microseconds(50), "0.0"),
            (.microseconds(150), "0.1"),
            (.milliseconds(12) + .microseconds(340), "12.3"),
            (.seconds(3), "3000.0"),
        ]
    )
    func durationFormatting(duration: Duration, expected: String) {
        let record = LogRecord(level: .info, event: .completed, method: "GET", url: "u", duration: duration)
        #expect(record.metadata["duration_ms"] == expected)
    }

    @Test("levels are ordered from trace to critical")
    func levelOrder() {
        #expect(LogRecord.Level.allCases.sorted() == [.trace, .debug, .info, .notice, .warning, .error, .critical])
        #expect(
            LogRecord.Level.allCases.map(\.description) == [
                "trace", "debug", "info", "notice", "warning", "error", "critical",
            ]
        )
    }

    @Test("the standard-error sink writes from info up unless told otherwise")
    func standardErrorSinkLevel() {
        #expect(LogSink.standardError.minimumLevel == .info)
        #expect(LogSink.standardError(minimumLevel: .notice).minimumLevel == .notice)
    }

    @Test(
        ".logging() writes one line per call to standard error, from info up: its debug start record is not written",
        .timeLimit(.minutes(1))
    )
    func defaultSinkWritesToStandardError() async throws {
        let path = "/v1/logging-to-stderr-\(UUID().uuidString)"
        let client = makeClient(MockTransport(.status(200)), [.logging(startLevel: .debug)])
        // Standard error goes to a file while the call runs; what other tests wrote meanwhile is copied back.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-stderr-\(UUID()).log")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: file) }
        let capture = try FileHandle(forWritingTo: file)
        let saved = dup(STDERR_FILENO)
        try #require(saved >= 0 && dup2(capture.fileDescriptor, STDERR_FILENO) >= 0)
        var failure: (any Error)?
        do {
            _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test" + path)!))
        } catch {
            failure = error
        }
        dup2(saved, STDERR_FILENO)
        close(saved)
        try capture.close()

        if let failure { throw failure }
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        let others = lines.filter { !$0.contains(path) }
        if !others.isEmpty { FileHandle.standardError.write(Data((others.joined(separator: "\n") + "\n").utf8)) }
        let ours = lines.filter { $0.contains(path) }
        #expect(ours.count == 1, "\(ours)")
        #expect(ours.first?.hasPrefix("[info] GET https://api.example.test\(path)") == true, "\(ours)")
    }

    @Test("the logging middleware is named logging")
    func name() {
        #expect(Middleware.logging().name == "logging")
    }
}

extension Array {
    /// The only element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
