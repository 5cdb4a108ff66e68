#if Postgres && os(Linux)
import Courier
import CourierTesting
import Foundation
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Starts `count` copies of the test binary that run only the tests matching `filter`, with `environment`
/// (which must set ``fleetReplicaVariable``), and returns what each printed and its exit status.
func runReplicaProcesses(
    _ count: Int,
    filter: String,
    environment: [String: String]
) async throws -> [ChildProcess.Result] {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let arguments = ["--testing-library", "swift-testing", "--filter", filter]
    return try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
        for _ in 0..<count {
            group.addTask { try await ChildProcess.run(executable, arguments, environment: environment) }
        }
        return try await group.reduce(into: []) { $0.append($1) }
    }
}

/// One quota for a fleet of replica processes on one real PostgreSQL: 100 requests per 2-second window shared
/// by 8 processes under sustained load, against a server that answers `429` past its limit. One of the
/// suite's tests, which run one at a time: two fleets of 8 processes at once would be a test of the machine.
extension FleetProcessTests {
    @Test("8 replica processes, 100 per 2 s for the fleet, sustained load: no 429, every window at least 90 % used")
    func oneQuotaAcrossProcesses() async throws {
        let api = try QuotaAPI(limit: 100, window: .seconds(2))
        defer { api.server.shutdown() }
        try await PostgresTestServer.withClient { client, table in
            try await PostgresRateLimitStore(client: client, table: table).createTable()
            // The replicas start together, a little later, whenever each process is ready.
            let start = Date().addingTimeInterval(3)
            let results = try await runReplicaProcesses(
                8,
                filter: "FleetQuotaReplicaProcess",
                environment: [
                    fleetReplicaVariable: "quota",
                    "FLEET_TABLE": table,
                    "FLEET_API": api.server.origin,
                    "FLEET_START": "\(start.timeIntervalSince1970)",
                    "FLEET_SECONDS": "7",
                ]
            )
            for result in results {
                #expect(result.status == 0, "\(result.text.suffix(2_000))")
                #expect(result.text.contains("replica: no call failed"), "\(result.text.suffix(2_000))")
            }
            let windows = api.windows
            print("fleet quota: accepted per server window \(windows.map(\.accepted)), refused \(api.refused)")
            #expect(api.refused == 0)
            // Every window but the last (cut short by the end of the run) served at least 90 of its 100.
            #expect(windows.count >= 3)
            for window in windows.dropLast() {
                #expect(window.accepted >= 90, "\(windows.map(\.accepted))")
            }
        }
    }
}

/// An API with a quota of `limit` requests per `window`, counted the way many servers count: a window starts
/// with the first request after the last one ended. Past the limit it answers `429`.
final class QuotaAPI: Sendable {
    struct Window: Sendable {
        var start: ContinuousClock.Instant
        var accepted: Int
    }

    private let state = Locked((windows: [Window](), refused: 0))
    let server: SocketServer

    var windows: [Window] { state.withLock { $0.windows } }
    var refused: Int { state.withLock { $0.refused } }

    init(limit: Int, window: Duration) throws {
        let state = self.state
        server = try SocketServer { _ in
            state.withLock { state in
                let now = ContinuousClock.now
                if state.windows.last.map({ now - $0.start >= window }) ?? true {
                    state.windows.append(Window(start: now, accepted: 0))
                }
                guard state.windows[state.windows.count - 1].accepted < limit else {
                    state.refused += 1
                    return .keepAlive(status: 429, headers: [.init(name: "Retry-After", value: "1")])
                }
                state.windows[state.windows.count - 1].accepted += 1
                return .keepAlive(status: 200, body: Data("{}".utf8))
            }
        }
    }
}

/// One replica, when the test binary runs as one (``FleetQuotaProcessTests``): a `RateLimiter` with a shared
/// limit of 100 per 2 s on `PostgresRateLimitStore`, and 20 workers calling the API without pause from
/// `FLEET_START` for `FLEET_SECONDS`.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[fleetReplicaVariable] == "quota"))
struct FleetQuotaReplicaProcess {
    @Test func replica() async throws {
        let environment = ProcessInfo.processInfo.environment
        let table = try #require(environment["FLEET_TABLE"])
        let api = try #require(environment["FLEET_API"].flatMap(URL.init(string:)))
        let start = Date(timeIntervalSince1970: try #require(environment["FLEET_START"].flatMap(Double.init)))
        let end = start.addingTimeInterval(try #require(environment["FLEET_SECONDS"].flatMap(Double.init)))

        let postgres = PostgresClient(configuration: PostgresTestServer.configuration())
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            group.addTask { await postgres.run() }
            let store = try PostgresRateLimitStore(client: postgres, table: table)
            // A wider margin than the default twentieth and a longer store timeout than the default second: eight
            // processes share two cores here with the rest of the test run. The margin absorbs how late a request
            // reaches the server after it took its slot; the timeout keeps a slow moment from being a failure
            // (the limiter's fallback, tested on its own).
            let limit = RateLimitPolicy.SharedLimit(
                maxRequests: 100,
                per: .seconds(2),
                margin: .milliseconds(300)
            )
            var policy = RateLimitPolicy(
                sharedLimit: limit,
                maximumWait: nil,
                onEvent: { event in
                    if case .storeFailed = event { print("replica: \(event)") }
                    if case .throttled = event { print("replica: throttled \(Date().timeIntervalSince(start)) s in") }
                }
            )
            policy.storeTimeout = .seconds(10)
            let limiter = RateLimiter(policy, store: store)
            let client = Client(baseURL: api, middleware: [.rateLimiting(limiter)])
            // The first call opens the connection pools before the start.
            _ = try? await postgres.query("SELECT 1")
            try await Task.sleep(for: .seconds(max(0, start.timeIntervalSinceNow)))
            let failures = await withTaskGroup(of: Int.self) { workers in
                for _ in 0..<20 {
                    workers.addTask {
                        var failures = 0
                        while Date() < end {
                            do {
                                let (_, response) = try await client.send(
                                    URLRequest(url: api.appendingPathComponent("data"))
                                )
                                if response.statusCode != 200 { failures += 1 }
                            } catch {
                                failures += 1
                                print("replica: a call failed: \(error)")
                            }
                        }
                        return failures
                    }
                }
                return await workers.reduce(0, +)
            }
            print(failures == 0 ? "replica: no call failed" : "replica: \(failures) calls failed")
            #expect(failures == 0)
        }
    }
}
#endif
