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

    @Test("a response is one info line with the method, the redacted URL, the status and the duration")
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
        #expect(entry.message == "Request completed")
        #expect(entry.metadata["http.request.method"] == "GET")
        #expect(entry.metadata["http.response.status_code"] == "200")
        #expect(entry.metadata["duration_ms"] == "12.3")
        #expect(entry.metadata["url.full"] == "https://api.example.test/users/42?access_token=REDACTED&page=2")
        #expect(entry.metadata["error.type"] == nil)
        #expect(entry.metadata["attempt"] == nil)
        #expect(entry.error == nil)
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

    @Test("a status of 400 or more is logged at the error-status level")
    func errorStatus() async throws {
        let handler = InMemoryLogHandler()
        let client = Client(
            transport: MockTransport(.status(404)),
            middleware: [.logging(logger: logger(handler), errorStatusLevel: .notice)]
        )

        _ = try await client.send(request("https://api.example.test/missing"))

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .notice)
        #expect(entry.metadata["http.response.status_code"] == "404")
    }

    @Test("a failure names its error code and the middleware it came from, at the failure level")
    func failure() async throws {
        let handler = InMemoryLogHandler()
        let validating = Middleware(name: "validating") { request, next in
            let (data, response) = try await next(request)
            throw CourierError(
                .unacceptableStatus,
                message: "the status \(response.statusCode) is not acceptable",
                request: request,
                response: response,
                body: data
            )
        }
        let client = Client(
            transport: MockTransport(.status(503)),
            middleware: [.logging(logger: logger(handler), failureLevel: .critical), validating]
        )

        await #expect(throws: CourierError.self) { try await client.send(request("https://api.example.test/x")) }

        let entry = try #require(handler.entries.only)
        #expect(entry.level == .critical)
        #expect(entry.message == "Request failed")
        #expect(entry.metadata["error.type"] == "unacceptableStatus")
        #expect(entry.metadata["middleware"] == "validating")
        #expect(entry.metadata["http.response.status_code"] == "503")
        #expect(entry.metadata["error.message"] == "the status 503 is not acceptable")
        #expect((entry.error as? CourierError)?.code == .unacceptableStatus)
    }

    @Test("secrets never reach the log handler: not in the URL, the error message or the error")
    func secretsAreRedacted() async throws {
        struct SigningFailed: Error, CustomStringConvertible {
            var description: String { "could not sign with Authorization: Bearer abcdef123456" }
        }
        let handler = InMemoryLogHandler()
        let failing = Middleware { _, _ in throw SigningFailed() }
        let client = Client(transport: MockTransport.ok, middleware: [.logging(logger: logger(handler)), failing])

        await #expect(throws: SigningFailed.self) {
            try await client.send(request("https://alice:hunter2@api.example.test/x?token=s3cr3t"))
        }

        let entry = try #require(handler.entries.only)
        let printed =
            entry.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            + " \(entry.error.map { String(describing: $0) } ?? "")"
        for secret in ["abcdef123456", "hunter2", "s3cr3t"] {
            #expect(!printed.contains(secret), "\(secret) was logged: \(printed)")
        }
        #expect(entry.metadata["error.type"].map { "\($0)".hasSuffix("SigningFailed") } == true)
    }

    @Test("a cancelled request is logged as cancelled at the normal level", .timeLimit(.minutes(1)))
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
        #expect(entry.message == "Request cancelled")
        #expect(entry.metadata["error.type"] == nil)
    }

    @Test("nothing is logged below the logger's level")
    func belowLevel() async throws {
        let handler = InMemoryLogHandler()
        let client = Client(
            transport: MockTransport(sequence: [.response(.ok), .response(.status(500))]),
            middleware: [.logging(logger: logger(handler, level: .error))]
        )

        _ = try await client.send(request("https://api.example.test/a"))
        _ = try await client.send(request("https://api.example.test/b"))

        #expect(handler.entries.isEmpty)
    }
}

extension Array {
    /// The only element, or `nil` when there are none or several.
    fileprivate var only: Element? { count == 1 ? first : nil }
}
#endif
