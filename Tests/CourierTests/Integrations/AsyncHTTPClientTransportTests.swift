#if AsyncHTTPClient
import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("AsyncHTTPClientTransport", .timeLimit(.minutes(1)))
struct AsyncHTTPClientTransportTests {
    @Test("an owned client never follows redirects, even when its configuration says so")
    func ownedClientDisallowsRedirects() async throws {
        let other = try SocketServer { _ in .response(status: 200) }
        defer { other.shutdown() }
        let location = other.url("/landing").absoluteString
        let server = try SocketServer { _ in .response(status: 301, headers: [.init(name: "Location", value: location)])
        }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport(
            configuration: HTTPClient.Configuration(redirectConfiguration: .follow(max: 5, allowCycles: false))
        )
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/start"))) }
        try await transport.shutdown()
        #expect(try result.get().1.statusCode == 301)
        #expect(other.requests.isEmpty)
    }

    @Test("a borrowed client is not shut down by the transport; the owner shuts it down")
    func borrowedClient() async throws {
        let server = try SocketServer { _ in .response(status: 204) }
        defer { server.shutdown() }
        let httpClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)
        )
        let transport = AsyncHTTPClientTransport(client: httpClient)
        #expect(!transport.ownsClient)
        try await transport.shutdown()
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/after"))) }
        try await httpClient.shutdown()
        #expect(try result.get().1.statusCode == 204)
    }

    @Test("after shutdown(), sending fails with clientShutDown")
    func shutDown() async throws {
        let transport = AsyncHTTPClientTransport()
        #expect(transport.ownsClient)
        try await transport.shutdown()
        let error = try await #require(throws: CourierError.self) {
            try await transport.send(URLRequest(url: URL(string: "http://127.0.0.1:9/")!))
        }
        #expect(error.code == .clientShutDown)
    }

    @Test("a refused connection fails at once with transport, saying which address refused it")
    func refusedConnection() async throws {
        let port = try RefusingPort()
        let transport = AsyncHTTPClientTransport()
        let client = Client(transport: transport)
        let clock = ContinuousClock()
        let start = clock.now
        let result = await outcome { try await client.send(URLRequest(url: port.url("/nobody-home"))) }
        let elapsed = start.duration(to: clock.now)
        try await transport.shutdown()
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .transport)
        #expect(error.message == "cannot connect to 127.0.0.1:\(port.port) (connection refused)")
        #expect(error.description.contains("cannot connect to 127.0.0.1:\(port.port) (connection refused)"))
        // The transport's configuration does not let the pool try again, which is what "at once" means here: with
        // AsyncHTTPClient's default the pool retries a refused connection until the connect timeout, so the call
        // would end no sooner than that. Bounded by the connect timeout itself, not by a guess at how fast a busy
        // machine is (5 s was exceeded once beside every other suite).
        let configuration = AsyncHTTPClientTransport.defaultConfiguration
        #expect(configuration.connectionPool.retryConnectionEstablishment == false)
        // No connect timeout in the configuration means AsyncHTTPClient's default of 10 seconds.
        let connectTimeout = configuration.timeout.connect.map { Duration.nanoseconds($0.nanoseconds) } ?? .seconds(10)
        #expect(elapsed < connectTimeout)
    }

    @Test("a refused connection to a host name says so too, whichever of its addresses refused it")
    func refusedConnectionByName() async throws {
        let port = try RefusingPort()
        let transport = AsyncHTTPClientTransport()
        let url = try #require(URL(string: "http://localhost:\(port.port)/nobody-home"))
        let result = await outcome { try await transport.send(URLRequest(url: url)) }
        try await transport.shutdown()
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .transport)
        #expect(error.message == "cannot connect to localhost:\(port.port) (connection refused)")
        #expect((error.underlying as? POSIXError)?.code == .ECONNREFUSED)
    }

    @Test("a refused connection is not retried by the pool until the connect timeout, however long it is")
    func refusedConnectionWithLongConnectTimeout() async throws {
        let port = try RefusingPort()
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        // Longer than the test's time limit: a pool that retries the connection until then fails the test.
        configuration.timeout.connect = .minutes(5)
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let result = await outcome { try await transport.send(URLRequest(url: port.url("/nobody-home"))) }
        try await transport.shutdown()
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .transport)
        #expect(RetryPolicy.isTransient(error))
    }

    @Test("AsyncHTTPClient's and SwiftNIO's connection errors are described, with a POSIXError underneath")
    func errorTranslation() throws {
        let request = URLRequest(url: URL(string: "https://api.example.test/v1")!)
        let cases: [(any Error, String, POSIXErrorCode)] = [
            (
                HTTPClientError.connectTimeout,
                "cannot connect to api.example.test:443 (no answer within the connect timeout)", .ETIMEDOUT
            ),
            (
                IOError(errnoCode: ECONNRESET, reason: "read"), "the connection to api.example.test:443 was reset",
                .ECONNRESET
            ),
            (
                IOError(errnoCode: EHOSTUNREACH, reason: "connect"),
                "cannot connect to api.example.test:443 (host unreachable)",
                .EHOSTUNREACH
            ),
        ]
        for (error, message, code) in cases {
            let translated = try #require(
                AsyncHTTPClientTransport.translate(error, request: request, deadline: nil) as? CourierError
            )
            #expect(translated.code == .transport)
            #expect(translated.message == message)
            #expect((translated.underlying as? POSIXError)?.code == code)
            #expect(RetryPolicy.isTransient(translated))
        }
        // Without a deadline of the call's, AsyncHTTPClient's own deadline error is passed on as it is.
        let passedOn = AsyncHTTPClientTransport.translate(
            HTTPClientError.deadlineExceeded,
            request: request,
            deadline: nil
        )
        #expect(passedOn as? HTTPClientError == .deadlineExceeded)
    }

    /// Sends a GET to `url` with a fresh transport under `deadline`, shuts the transport down, and returns
    /// the `CourierError` the send failed with.
    private func timedOutError(sending url: URL, before deadline: Deadline) async throws -> CourierError {
        let transport = AsyncHTTPClientTransport()
        let result = await outcome {
            try await Deadline.$current.withValue(deadline) { try await transport.send(URLRequest(url: url)) }
        }
        try await transport.shutdown()
        return try #require(result.failure as? CourierError, "\(result)")
    }

    @Test("a request under a Deadline gives up when it passes, even with no timeout middleware")
    func honoursDeadline() async throws {
        let server = try SocketServer { _ in .hang }
        defer { server.shutdown() }
        let error = try await timedOutError(sending: server.url("/slow"), before: Deadline(after: .milliseconds(200)))
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(200))
        #expect(server.requests.count == 1)
        await server.closedByClient.wait(for: 1)
    }

    @Test("a body still arriving when the Deadline passes fails the call with timedOut, and the connection closes")
    func deadlineBoundsBody() async throws {
        let server = try SocketServer { _ in .drip }
        defer { server.shutdown() }
        let error = try await timedOutError(sending: server.url("/drip"), before: Deadline(after: .milliseconds(300)))
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(300))
        await server.closedByClient.wait(for: 1)
    }

    /// Makes `calls` calls at once, the `index`th with `call(index)`, and returns how each ended and how long it took.
    private static func timedCalls(
        _ calls: Int,
        _ call: @escaping @Sendable (Int) async throws -> Void
    ) async -> [(Result<Void, any Error>, Duration)] {
        let clock = ContinuousClock()
        return await withTaskGroup(of: (Result<Void, any Error>, Duration).self) { group in
            for index in 0..<calls {
                group.addTask {
                    let start = clock.now
                    let result = await outcome { try await call(index) }
                    return (result, clock.now - start)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test(
        "a body still arriving under a timeout (the middleware's, or a request's own) is cut at its deadline by its shared timer",
        arguments: [1, 3],
        [false, true]
    )
    func timeoutBoundsBody(calls: Int, requestsOwn: Bool) async throws {
        let server = try SocketServer { _ in .drip }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        // A request's own timeout runs around a retry: it does not try again once the call's own time is up.
        let client = Client(
            transport: transport,
            middleware: [requestsOwn ? .retry(.default) : .timeout(.milliseconds(300))]
        )
        // Several at once share the timer: each is cut at its own deadline.
        let results = await Self.timedCalls(calls) { index in
            let request = Request<Data>(
                method: .get,
                target: .url(server.url("/drip/\(index)")),
                timeout: requestsOwn ? .milliseconds(300) : nil
            ) { data, _, _ in data }
            _ = try await client.send(request)
        }
        try await transport.shutdown()
        #expect(results.count == calls)
        for (result, elapsed) in results {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .timedOut)
            #expect(error.timeout == .milliseconds(300))
            #expect(error.middleware == (requestsOwn ? nil : "timeout"))
            #expect(error.timeoutScope == .call)
            #expect(elapsed >= .milliseconds(300))
        }
        #expect(server.requests.count == calls)
        await server.closedByClient.wait(for: calls)
    }

    @Test("a Deadline that has passed already fails the request before anything is sent")
    func deadlinePassedBeforeSending() async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let error = try await timedOutError(sending: server.url("/late"), before: Deadline(after: .zero))
        #expect(error.code == .timedOut)
        #expect(server.requests.isEmpty)
    }

    @Test("a Deadline on a manual clock is virtual: the transport does not enforce it in real time")
    func virtualDeadlineIgnored() async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        // Passed already on its own clock, which nothing moves: a real-time transport must leave it alone.
        let deadline = Deadline(after: .zero, clock: ManualClock())
        let result = await outcome {
            try await Deadline.$current.withValue(deadline) {
                try await transport.send(URLRequest(url: server.url("/virtual")))
            }
        }
        try await transport.shutdown()
        #expect(result.success?.1.statusCode == 200, "\(result)")
        #expect(server.requests.count == 1)
    }

    @Test("a body stream is read and sent whole")
    func bodyStream() async throws {
        let server = try SocketServer { request in .response(status: 200, body: request.body) }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        var request = URLRequest(url: server.url("/upload"))
        request.httpMethod = "PUT"
        request.httpBodyStream = InputStream(data: Data(repeating: 0x62, count: 100_000))
        let result = await outcome { try await transport.send(request) }
        try await transport.shutdown()
        #expect(try result.get().0 == Data(repeating: 0x62, count: 100_000))
        #expect(server.requests.first?.method == "PUT")
    }

    @Test("a streamed body of known length is sent whole to a server that answers and closes once it has it all")
    func knownLengthUploadToClosingServer() async throws {
        // The server answers with `Connection: close` as soon as it has read `Content-Length` bytes: the body
        // must end in the same turn of the event loop as its last byte is written, or AsyncHTTPClient reads the
        // answer and the close while it still counts the request as sending, and fails it.
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        let client = Client(baseURL: server.url(), transport: transport)
        var failures: [String] = []
        for round in 0..<40 {
            let factory = ChunkFactory((0..<3).map { Data(repeating: UInt8($0), count: 20_000) })
            let body = RequestBody.stream(length: 60_000) { factory.make() }
            let result = await outcome {
                try await client.send(Request<Data>(method: .post, target: .path("/upload"), body: body))
            }
            if case .failure(let error) = result { failures.append("round \(round): \(error)") }
        }
        try await transport.shutdown()
        #expect(failures.isEmpty, "\(failures)")
        #expect(server.requests.count == 40)
        #expect(server.requests.allSatisfy { $0.body.count == 60_000 })
    }

    @Test("the request is converted field by field")
    func requestConversion() throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/a/b?c=d%20e")!)
        request.httpMethod = "PATCH"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        request.httpBody = Data("{}".utf8)
        let converted = try AsyncHTTPClientTransport.makeHead(from: request)
        #expect(converted.url == "http://127.0.0.1:8080/a/b?c=d%20e")
        #expect(converted.method.rawValue == "PATCH")
        #expect(converted.headers.first(name: "content-type") == "application/json")
        #expect(converted.headers.first(name: "authorization") == "Bearer t")
        #expect(converted.headers.count == 2)
        #expect(try AsyncHTTPClientTransport.makeBody(from: request) != nil)
        #expect(try AsyncHTTPClientTransport.makeBody(from: URLRequest(url: URL(string: "http://127.0.0.1/")!)) == nil)
    }

    @Test(
        "converting a request checks it as RequestValidation does, whichever part is bad",
        arguments: InvalidRequest.allCases
    )
    func conversionValidates(invalid: InvalidRequest) throws {
        let request = invalid.request
        // The transport's own pass and the shared check agree on every case.
        let error = try #require(throws: CourierError.self) { try AsyncHTTPClientTransport.makeHead(from: request) }
        #expect(error.code == .invalidRequest)
        #expect(throws: CourierError.self) { try RequestValidation.validate(request) }
    }

    enum InvalidRequest: CaseIterable, Sendable {
        case noURL, relativeURL, methodWithLineBreak, emptyMethod, nameWithLineBreak, nameWithSpace, valueWithCR
        case valueWithLF, valueWithNUL, badHeaderAmongGoodOnes

        var request: URLRequest {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/x")!)
            switch self {
            case .noURL: request.url = nil
            case .relativeURL: request.url = URL(string: "relative/path")
            case .methodWithLineBreak: request.httpMethod = "GET /smuggled HTTP/1.1\r\nX: 1\r\n\r\nGET"
            case .emptyMethod: request.httpMethod = ""
            case .nameWithLineBreak: request.allHTTPHeaderFields = ["X-Bad\r\nX-Injected": "1"]
            case .nameWithSpace: request.allHTTPHeaderFields = ["X Bad": "1"]
            case .valueWithCR: request.allHTTPHeaderFields = ["X-Note": "a\rb"]
            case .valueWithLF: request.allHTTPHeaderFields = ["X-Note": "a\nX-Injected: 1"]
            case .valueWithNUL: request.allHTTPHeaderFields = ["X-Note": "a\u{0}b"]
            case .badHeaderAmongGoodOnes:
                request.allHTTPHeaderFields = ["Accept": "application/json", "X-Note": "a\r\nb", "X-Other": "c"]
            }
            return request
        }
    }

    @Test("a valid request with a tab and non-ASCII text in a value converts")
    func conversionAcceptsValidValues() throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:8080/x")!)
        request.allHTTPHeaderFields = ["X-Tab": "a\tb", "X-Text": "grüße", "X-Empty": ""]
        let converted = try AsyncHTTPClientTransport.makeHead(from: request)
        #expect(converted.headers.first(name: "X-Text") == "grüße")
        #expect(converted.headers.first(name: "X-Tab") == "a\tb")
    }

    @Test("repeated response headers are joined with commas; the status and URL are kept")
    func responseConversion() throws {
        let response = HTTPClientResponse(
            version: .http1_1,
            status: .accepted,
            headers: NIOHTTP1.HTTPHeaders([("Vary", "Accept"), ("Vary", "Origin"), ("Content-Type", "text/plain")])
        )
        let url = URL(string: "http://127.0.0.1/x")!
        let converted = try AsyncHTTPClientTransport.makeResponse(response, for: URLRequest(url: url))
        #expect(converted.statusCode == 202)
        #expect(converted.url == url)
        #expect(converted.value(forHTTPHeaderField: "vary") == "Accept, Origin")
        #expect(converted.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(converted.mimeType == "text/plain")
    }

    @Test("a field repeated with other spellings is joined under its first spelling, in the order received")
    func repeatedFieldSpelledDifferently() throws {
        let headers = NIOHTTP1.HTTPHeaders([
            ("Set-Cookie", "a=1"), ("Vary", "Accept"), ("set-cookie", "b=2"), ("SET-COOKIE", "c=3"),
            ("set-cookie", "d=4"), ("Content-Type", "text/plain"),
        ])
        let fields = try AsyncHTTPClientTransport.headerFields(headers, for: nil)
        #expect(fields == ["Set-Cookie": "a=1, b=2, c=3, d=4", "Vary": "Accept", "Content-Type": "text/plain"])
        let converted = try AsyncHTTPClientTransport.makeResponse(
            HTTPClientResponse(status: .ok, headers: headers),
            for: URLRequest(url: URL(string: "http://127.0.0.1/x")!)
        )
        #expect(converted.allHeaderFields.count == 3)
        #expect(converted.value(forHTTPHeaderField: "set-cookie") == "a=1, b=2, c=3, d=4")
        #expect(converted.value(forHTTPHeaderField: "SET-COOKIE") == "a=1, b=2, c=3, d=4")
        #expect(converted.value(forHTTPHeaderField: "vARY") == "Accept")
    }

    @Test("names that differ in more than the case of letters stay apart; empty values are joined too")
    func distinctFieldNames() throws {
        // `^` and `~` differ by the bit that tells ASCII cases apart, and are both allowed in a name.
        let fields = try AsyncHTTPClientTransport.headerFields(
            NIOHTTP1.HTTPHeaders([
                ("X-A^B", "1"), ("X-A~B", "2"), ("Date", "today"), ("Vary", ""), ("Vary", "Origin"), ("ETag", "\"e\""),
            ]),
            for: nil
        )
        #expect(fields == ["X-A^B": "1", "X-A~B": "2", "Date": "today", "Vary": ", Origin", "ETag": "\"e\""])
    }

    @Test(
        "the HTTP version is written out",
        arguments: [
            (NIOHTTP1.HTTPVersion.http1_1, "HTTP/1.1"), (.http1_0, "HTTP/1.0"), (.http2, "HTTP/2.0"),
            (.http3, "HTTP/3.0"), (.init(major: 0, minor: 9), "HTTP/0.9"),
        ]
    )
    func versionString(version: NIOHTTP1.HTTPVersion, expected: String) {
        #expect(AsyncHTTPClientTransport.versionString(version) == expected)
    }
}
#endif

#if AsyncHTTPClient
extension Result {
    /// The value, when this is a success.
    fileprivate var success: Success? {
        try? get()
    }
}
#endif
