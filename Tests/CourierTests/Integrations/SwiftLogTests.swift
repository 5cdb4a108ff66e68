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
    private let handler = InMemoryLogHandler()

    /// A logger that keeps its entries in memory, at `level`.
    private func logger(_ handler: InMemoryLogHandler, level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "courier-tests") { _ in handler }
        logger.logLevel = level
        return logger
    }

    @Test("a response is one info entry with the method, the redacted URL, the status and the duration")
    func response() async throws {
        let clock = ManualClock()
        let transport = MockTransport.taking(.microseconds(12_345), on: clock)
        let client = Client(transport: transport, middleware: [.logging(to: .swiftLog(logger(handler)), clock: clock)])

        _ = try await client.send(urlRequest("https://api.example.test/users/42?access_token=s3cr3t&page=2"))

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
        var logger = logger(handler)
        logger[metadataKey: "request.id"] = "abc-1"
        let client = Client(transport: MockTransport.ok, middleware: [.logging(logger: logger)])

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        #expect(handler.entries.only?.metadata["request.id"] == "abc-1")
    }

    @Test("the levels come from the parameters of .logging")
    func levels() async throws {
        let client = Client(
            transport: MockTransport(.ok, then: .status(404)),
            middleware: [
                .logging(to: .swiftLog(logger(handler)), level: .debug, errorStatusLevel: .notice, startLevel: .trace)
            ]
        )

        _ = try await client.send(urlRequest("https://api.example.test/found"))
        _ = try await client.send(urlRequest("https://api.example.test/missing"))

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
        let client = Client(
            transport: MockTransport(.status(503)),
            middleware: [
                .logging(to: .swiftLog(logger(handler)), failureLevel: .critical),
                .validatingStatus(),
            ]
        )

        await #expect(throws: CourierError.self) { try await client.send(urlRequest("https://api.example.test/x")) }

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .critical)
        #expect(entry.message == "HTTP request failed")
        #expect(entry.metadata["error.code"] == "unacceptableStatus")
        #expect(entry.metadata["middleware"] == "validatingStatus")
        #expect(entry.metadata["http.status_code"] == "503")
    }

    @Test("secrets never reach the log handler: not in the URL, the headers or the error")
    func secretsAreRedacted() async throws {
        let failing = failing(quoting: "could not sign with Authorization: Bearer abcdef123456")
        let client = Client(
            transport: MockTransport.ok,
            middleware: [.logging(to: .swiftLog(logger(handler)), includesHeaders: true), failing]
        )
        var request = urlRequest("https://alice:hunter2@api.example.test/x?token=s3cr3t")
        request.setValue("Bearer tok_987654321", forHTTPHeaderField: "Authorization")

        await #expect(throws: QuotingError.self) { try await client.send(request) }

        let entry = try #require(handler.entries.only)
        let printed = entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        for secret in ["abcdef123456", "hunter2", "s3cr3t", "tok_987654321"] {
            #expect(!printed.contains(secret), "\(secret) was logged: \(printed)")
        }
        #expect(entry.metadata["http.request.header.authorization"] == "<redacted>")
    }

    @Test("a cancelled request is logged as cancelled", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let arrived = Arrivals()
        let client = Client(
            transport: MockTransport.hanging(counting: arrived),
            middleware: [.logging(logger: logger(handler))]
        )

        await expectCancellation(
            sending: urlRequest("https://api.example.test/slow"),
            through: client,
            arrived: arrived
        )

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .info)
        #expect(entry.message == "HTTP request cancelled")
        #expect(entry.metadata["error.code"] == nil)
    }

    @Test("inside a retry layer, each entry names its attempt")
    func attempt() async throws {
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

        _ = try await client.send(urlRequest("https://api.example.test/x"))

        #expect(handler.entries.map { $0.metadata["attempt"] } == ["1", "2", nil])
    }

    @Test("nothing reaches the handler below the logger's level")
    func belowLevel() async throws {
        let sink = LogSink.swiftLog(logger(handler, level: .error))
        let client = Client(
            transport: MockTransport(.ok, then: .status(500)),
            middleware: [.logging(to: sink)]
        )

        _ = try await client.send(urlRequest("https://api.example.test/a"))
        _ = try await client.send(urlRequest("https://api.example.test/b"))

        #expect(handler.entries.isEmpty)
        #expect(sink.minimumLevel == .error)
    }

    @Test("every record level maps to the swift-log level of the same name", arguments: LogRecord.Level.allCases)
    func levelMapping(level: LogRecord.Level) throws {
        LogSink.swiftLog(logger(handler)).log(LogRecord(level: level, event: .completed, method: "GET", url: "/"))

        let entry = try #require(handler.entries.only)
        #expect(entry.level.rawValue == level.description)
    }
}

extension Array {
    /// The only element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
#endif
