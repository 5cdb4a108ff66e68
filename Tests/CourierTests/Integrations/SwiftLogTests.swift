#if Logging
import Courier
import CourierTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Logging through swift-log (trait Logging)")
struct SwiftLogTests {
    /// A logger that keeps its entries in memory, at `level`.
    private func logger(_ handler: InMemoryLogHandler, level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "courier-tests") { _ in handler }
        logger.logLevel = level
        return logger
    }

    private func request(_ url: String, method: String = "GET") -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        return request
    }

    @Test("a response is one info entry with the method, the redacted URL, the status and the duration")
    func response() async throws {
        let handler = InMemoryLogHandler()
        let clock = ManualClock()
        let transport = MockTransport { _ in
            clock.advance(by: .microseconds(12_345))
            return .ok
        }
        let client = Client(transport: transport, middleware: [.logging(logger: logger(handler), clock: clock)])

        _ = try await client.send(request("https://api.example.test/users/42?access_token=s3cr3t&page=2"))

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .info)
        #expect(entry.message == "HTTP request completed")
        #expect(entry.metadata["event"] == "completed")
        #expect(entry.metadata["http.method"] == "GET")
        #expect(entry.metadata["http.status_code"] == "200")
        #expect(entry.metadata["duration_ms"] == "12.3")
        #expect(entry.metadata["http.url"] == "https://api.example.test/users/42?access_token=REDACTED&page=2")
        #expect(entry.metadata["error.code"] == nil)
        #expect(entry.metadata["attempt"] == nil)
    }

    @Test("the logger's own metadata is kept")
    func loggerMetadata() async throws {
        let handler = InMemoryLogHandler()
        var logger = logger(handler)
        logger[metadataKey: "request.id"] = "abc-1"
        let client = Client(transport: MockTransport.ok, middleware: [.logging(logger: logger)])

        _ = try await client.send(request("https://api.example.test/x"))

        #expect(handler.entries.only?.metadata["request.id"] == "abc-1")
    }

    @Test("the levels come from the logging options")
    func levels() async throws {
        let handler = InMemoryLogHandler()
        let options = LoggingOptions(level: .debug, errorStatusLevel: .notice, startLevel: .trace)
        let client = Client(
            transport: MockTransport(.ok, then: .status(404)),
            middleware: [.logging(logger: logger(handler), options: options)]
        )

        _ = try await client.send(request("https://api.example.test/found"))
        _ = try await client.send(request("https://api.example.test/missing"))

        #expect(handler.entries.map(\.level) == [.trace, .debug, .trace, .notice])
        #expect(
            handler.entries.map(\.message) == [
                "HTTP request started", "HTTP request completed", "HTTP request started", "HTTP request completed",
            ]
        )
        #expect(handler.entries.last?.metadata["http.status_code"] == "404")
    }

    @Test("a failure names its error code and the middleware it came from, at the failure level")
    func failure() async throws {
        let handler = InMemoryLogHandler()
        let client = Client(
            transport: MockTransport(.status(503)),
            middleware: [
                .logging(logger: logger(handler), options: LoggingOptions(failureLevel: .critical)),
                .validatingStatus(),
            ]
        )

        await #expect(throws: CourierError.self) { try await client.send(request("https://api.example.test/x")) }

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .critical)
        #expect(entry.message == "HTTP request failed")
        #expect(entry.metadata["error.code"] == "unacceptableStatus")
        #expect(entry.metadata["middleware"] == "validatingStatus")
        #expect(entry.metadata["http.status_code"] == "503")
    }

    @Test("secrets never reach the log handler: not in the URL, the headers or the error")
    func secretsAreRedacted() async throws {
        struct SigningFailed: Error, CustomStringConvertible {
            var description: String { "could not sign with Authorization: Bearer abcdef123456" }
        }
        let handler = InMemoryLogHandler()
        let failing = Middleware { _, _ in throw SigningFailed() }
        let client = Client(
            transport: MockTransport.ok,
            middleware: [.logging(logger: logger(handler), options: LoggingOptions(includesHeaders: true)), failing]
        )
        var request = request("https://alice:hunter2@api.example.test/x?token=s3cr3t")
        request.setValue("Bearer tok_987654321", forHTTPHeaderField: "Authorization")

        await #expect(throws: SigningFailed.self) { try await client.send(request) }

        let entry = try #require(handler.entries.only)
        let printed = entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        for secret in ["abcdef123456", "hunter2", "s3cr3t", "tok_987654321"] {
            #expect(!printed.contains(secret), "\(secret) was logged: \(printed)")
        }
        #expect(entry.metadata["http.request.header.authorization"] == "<redacted>")
    }

    @Test("a cancelled request is logged as cancelled", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let handler = InMemoryLogHandler()
        let arrived = Arrivals()
        let transport = MockTransport { _ in
            arrived.arrive()
            try await waitForCancellation()
            return .ok
        }
        let client = Client(transport: transport, middleware: [.logging(logger: logger(handler))])

        let task = Task { try await client.send(request("https://api.example.test/slow")) }
        await arrived.wait(for: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .info)
        #expect(entry.message == "HTTP request cancelled")
        #expect(entry.metadata["error.code"] == nil)
    }

    @Test("inside a retry layer, each entry names its attempt")
    func attempt() async throws {
        let handler = InMemoryLogHandler()
        let twoAttempts = Middleware(name: "two-attempts") { request, next in
            for attempt in 1...2 {
                let context = RetryContext(attempt: attempt, maximumAttempts: 2)
                _ = try await RetryContext.$current.withValue(context) { try await next(request) }
            }
            return try await next(request)
        }
        let client = Client(
            transport: MockTransport.ok,
            middleware: [twoAttempts, .logging(logger: logger(handler))]
        )

        _ = try await client.send(request("https://api.example.test/x"))

        #expect(handler.entries.map { $0.metadata["attempt"] } == ["1", "2", nil])
    }

    @Test("nothing reaches the handler below the logger's level")
    func belowLevel() async throws {
        let handler = InMemoryLogHandler()
        let sink = SwiftLogSink(logger(handler, level: .error))
        let client = Client(
            transport: MockTransport(.ok, then: .status(500)),
            middleware: [.logging(to: sink)]
        )

        _ = try await client.send(request("https://api.example.test/a"))
        _ = try await client.send(request("https://api.example.test/b"))

        #expect(handler.entries.isEmpty)
        #expect(!sink.accepts(.warning))
        #expect(sink.accepts(.error))
    }

    @Test("every record level maps to the swift-log level of the same name", arguments: LogRecord.Level.allCases)
    func levelMapping(level: LogRecord.Level) throws {
        let handler = InMemoryLogHandler()
        SwiftLogSink(logger(handler)).log(LogRecord(level: level, event: .completed, method: "GET", url: "/"))

        let entry = try #require(handler.entries.only)
        #expect(entry.level.rawValue == level.description)
    }
}

extension Array {
    /// The only element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
#endif
