import AsyncHTTPClient
import Courier
import CourierTesting
import Foundation
import NIOCore
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transports every end-to-end test runs over.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    var testDescription: String { rawValue }

    /// A new transport of this kind. An `AsyncHTTPClientTransport` owns its `HTTPClient` and shuts it down
    /// when it is released.
    ///
    /// Either transport opens at most `connections` connections to one origin; requests beyond that wait in
    /// the transport's queue. Neither gives up on a queued request for minutes (the tests' own time limits and
    /// timeout middleware are what bound a call), so that a fan-out of 1,000 on a loaded machine waits for a
    /// connection instead of failing with AsyncHTTPClient's `getConnectionFromPoolTimeout`.
    ///
    /// - Parameters:
    ///   - maximumResponseSize: The largest response body accepted.
    ///   - connections: The most connections to one origin; the transport's default (6 for `URLSession`,
    ///     8 for AsyncHTTPClient) when `nil`.
    /// - Returns: The transport.
    func make(
        maximumResponseSize: Int = URLSessionTransport.defaultMaximumResponseSize,
        connections: Int? = nil
    ) -> any Transport {
        switch self {
        case .urlSession:
            let configuration = URLSessionTransport.defaultConfiguration
            if let connections { configuration.httpMaximumConnectionsPerHost = connections }
            // Time spent waiting for a connection counts against it (60 seconds by default).
            configuration.timeoutIntervalForRequest = 300
            return URLSessionTransport(configuration: configuration, maximumResponseSize: maximumResponseSize)
        case .asyncHTTPClient:
            var configuration = AsyncHTTPClientTransport.defaultConfiguration
            if let connections { configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections }
            // A request that waits for a pooled connection longer than the connect timeout (10 seconds by
            // default) fails with `getConnectionFromPoolTimeout`.
            configuration.timeout.connect = .minutes(5)
            return AsyncHTTPClientTransport(configuration: configuration, maximumResponseSize: maximumResponseSize)
        }
    }
}

/// One end-to-end test's set-up: a server of its own, the transport kind under test, a key of its own for the
/// server's per-key counters and realms, and an ``Inspector`` of the server.
struct EndToEnd: Sendable {
    let kind: TransportKind
    let server: RunningServer
    let key: String
    let inspector: Inspector

    /// Runs `body` for a test over `kind`, with a new server that stops when `body` returns.
    static func run(_ kind: TransportKind, _ body: (EndToEnd) async throws -> Void) async throws {
        try await TestServers.withServer { server in
            try await body(EndToEnd(kind: kind, server: server, key: uniqueKey(), inspector: Inspector(server)))
        }
    }

    /// A client of the server (its origin as the base URL) over a new transport of the kind, with `middleware`.
    ///
    /// - Parameter connections: The most connections to the server; the transport's default when `nil`.
    func client(_ middleware: [Middleware] = [], connections: Int? = nil) -> Client {
        Client(baseURL: server.baseURL, transport: kind.make(connections: connections), middleware: middleware)
    }

    /// `GET /hang` for this test's key: the server holds it until the client goes away.
    var hang: URLRequest {
        URLRequest(url: server.url("/hang", query: ["key": key]))
    }

    /// Waits until `count` of the key's held `/hang` requests have ended, and expects exactly that many, with
    /// none still held: the server has seen each of their connections close, and no other request hang.
    func expectHangsEnded(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let ended = try await inspector.wait(key, ["hangsEnded": count], sourceLocation: sourceLocation)
        #expect(ended.hangsEnded == count, sourceLocation: sourceLocation)
        #expect(ended.hanging == 0, sourceLocation: sourceLocation)
    }
}

/// Cancels `calls` and expects every one of them to have ended with `CancellationError`.
func expectAllCancelled(
    _ calls: Task<[Result<(Data, HTTPURLResponse), any Error>], Never>,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    calls.cancel()
    let results = await calls.join()
    #expect(
        results.allSatisfy { if case .failure(let error) = $0 { error is CancellationError } else { false } },
        sourceLocation: sourceLocation
    )
}

/// Reads a server's counters and auth statistics over a transport of its own (never the one under test).
struct Inspector: Sendable {
    let client: Client

    init(_ server: RunningServer) {
        // A `URLSession` that lets a request wait for minutes: under the thread sanitizer, with the fan-out
        // tests running, one round of `wait` has taken longer than its 60-second default.
        self.client = Client(baseURL: server.baseURL, transport: TransportKind.urlSession.make())
    }

    /// The counters of `key`.
    func counters(_ key: String) async throws -> CounterSnapshot {
        try await client.send(.get("/count/\(key)"))
    }

    /// Waits on the server until the named counters of `key` reach the given values; fails the test when
    /// they do not within six of the server's five-second waits.
    func wait(
        _ key: String,
        _ conditions: KeyValuePairs<String, Int>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CounterSnapshot {
        let query = Self.query(conditions, timeoutMs: 5000)
        let request = Request<CounterSnapshot>.get("/wait/\(key)", query: query).accepting(200..<500)
        // A loaded machine (two cores, shared) can be slow to close a connection: wait up to six rounds.
        var (snapshot, response) = try await client.response(for: request)
        for _ in 1..<6 where response.statusCode != 200 {
            (snapshot, response) = try await client.response(for: request)
        }
        #expect(
            response.statusCode == 200,
            "waited for \(conditions) of \(key): \(snapshot)",
            sourceLocation: sourceLocation
        )
        return snapshot
    }

    /// Whether the counters of `key` reach the given values within `timeoutMs` (the server answers 408
    /// when they do not).
    func reaches(_ key: String, _ conditions: KeyValuePairs<String, Int>, timeoutMs: Int) async throws -> Bool {
        let query = Self.query(conditions, timeoutMs: timeoutMs)
        let request = Request<CounterSnapshot>.get("/wait/\(key)", query: query).accepting(200..<500)
        return try await client.response(for: request).response.statusCode == 200
    }

    private static func query(_ conditions: KeyValuePairs<String, Int>, timeoutMs: Int) -> Query {
        var items = [URLQueryItem(name: "timeoutMs", value: String(timeoutMs))]
        for (name, value) in conditions { items.append(URLQueryItem(name: name, value: String(value))) }
        return Query(items)
    }

    /// The statistics of an auth realm.
    func authStats(_ realm: String) async throws -> AuthStats {
        try await client.send(.get("/auth/\(realm)/stats"))
    }
}

/// A unique key for the server's per-key counters and realms.
func uniqueKey() -> String {
    UUID().uuidString.lowercased()
}

/// Holds every request just inside the client until `count` of them have arrived, then lets them all go at
/// once: a test that releases them has shown that all `count` were in flight together.
struct Muster: Sendable {
    let count: Int
    let arrivals = Arrivals()
    let gate = Gate()

    /// The middleware that holds the requests; put it in the client's list.
    var middleware: Middleware {
        Middleware(name: "muster") { [arrivals, gate] request, next in
            arrivals.arrive()
            await gate.wait()
            return try await next(request)
        }
    }

    /// Waits until `count` requests are held, then releases them (and any later ones).
    func releaseWhenAllArrived() async {
        await arrivals.wait(for: count)
        gate.open()
    }
}

/// Runs a suite, or each case of a test, with no other test server running: it waits until every server other
/// tests started has shut down, and servers that other tests start meanwhile wait until it is done (see
/// `ServerGate`).
///
/// - `.runsAlone`, on a suite: for load tests whose timeouts are real. Beside the other suites, which Swift
///   Testing runs in parallel, such a test measures their load as much as its own.
/// - `.measuresPeakMemory`, on a test: each case alone, for a test that measures this process's peak resident
///   memory. The peak belongs to the whole process, so what a test of another suite allocates beside it counts as
///   the measured test's growth (the 1 GiB stream's peak grew by 94 MiB once beside the download suite's
///   resumable download, past its 64 MiB bound, and stayed under it run alone). Running alone holds back other
///   tests' servers, not tests without one, nor the in-process server's own buffers: the same stream grew by
///   92 MiB once more in a fresh-clone CI run, so the streaming tests now read in a child process of their own
///   (``ChildStreamReader``), whose peak is the client's alone.
///
/// A test of another suite that starts a server meanwhile waits within its own time limit, which counts five
/// minutes for that (`endToEndLimit(minutes:)`; the fan-out suite runs for about 50 s).
struct RunsAloneTrait: SuiteTrait, TestTrait, TestScoping {
    /// Whether each case runs alone (the cases of other tests can run between them), rather than the whole suite
    /// in one stretch.
    let eachCase: Bool

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        if eachCase { testCase == nil ? nil : self } else { test.isSuite ? self : nil }
    }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Other suites' servers live for seconds; 15 minutes is far past the slowest whole run of them.
        try await ServerGate.shared.alone(waitingAtMost: .seconds(15 * 60)) {
            try await function()
        }
    }
}

extension Trait where Self == RunsAloneTrait {
    /// Runs the suite with no other test server running (see ``RunsAloneTrait``).
    static var runsAlone: Self { Self(eachCase: false) }

    /// Runs each case with no other test server running, for a test that measures peak memory (see
    /// ``RunsAloneTrait``).
    static var measuresPeakMemory: Self { Self(eachCase: true) }
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of an end-to-end test: `minutes` for the test's own work, and five more for the wait for a
    /// ``RunsAloneTrait`` suite or case, which hold back every other test's server
    /// while they run (the fan-out suite 46 s here when the whole package runs, each large body's case seconds
    /// to tens of seconds; CI's machine is slower). A limit is a guard against a hang, not a measure of speed.
    static func endToEndLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(minutes + 5))
    }
}
