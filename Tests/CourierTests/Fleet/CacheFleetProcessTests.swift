#if Postgres && os(Linux)
import Courier
import CourierTesting
import Foundation
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The environment variable that makes the test binary a cache replica (``CacheFleetReplicaProcess``).
let cacheFleetReplicaVariable = "COURIER_CACHE_FLEET_REPLICA"

/// Replicas as real processes sharing one cache on one real PostgreSQL: the test binary starts copies of itself
/// that run only ``CacheFleetReplicaProcess``, against an origin this process serves on 127.0.0.1.
@Suite(
    "A fleet of replica processes sharing one cache on PostgreSQL",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .enabled(if: ProcessInfo.processInfo.environment[cacheFleetReplicaVariable] == nil, "a replica itself"),
    .timeLimit(.minutes(2))
)
struct CacheFleetProcessTests {
    @Test(
        "4 replica processes request a max-age=2 resource for 5 s with two credentials: one origin fetch per freshness period per credential, never another's body"
    )
    func oneFetchPerFreshnessPeriod() async throws {
        let fetches = Locked<[String: [ContinuousClock.Instant]]>([:])
        let origin = try SocketServer { request in
            let credential = request.header("Authorization") ?? "nobody"
            fetches.withLock { $0[credential, default: []].append(.now) }
            return .keepAlive(
                status: 200,
                headers: [.init(name: "Cache-Control", value: "public, max-age=2")],
                body: Data("for \(credential)".utf8)
            )
        }
        defer { origin.shutdown() }
        try await PostgresTestServer.withClient { client, table in
            try await PostgresHTTPCacheStore(client: client, table: table).createTable()
            let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            let environment = [
                cacheFleetReplicaVariable: "1",
                "CACHE_FLEET_TABLE": table,
                "CACHE_FLEET_API": origin.origin,
                "CACHE_FLEET_SECONDS": "5",
            ]
            let arguments = ["--testing-library", "swift-testing", "--filter", "CacheFleetReplicaProcess"]
            let results = try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await ChildProcess.run(executable, arguments, environment: environment) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results {
                #expect(result.status == 0, "\(result.text.suffix(2_000))")
                #expect(result.text.contains(", 0 wrong bodies"), "\(result.text.suffix(2_000))")
            }
            let times = fetches.value
            #expect(Set(times.keys) == ["Bearer alice", "Bearer bob"])
            for (credential, instants) in times {
                let sorted = instants.sorted()
                // Every replica asked throughout 5 s: at least 2 freshness periods began.
                #expect(sorted.count >= 2, "\(credential): \(sorted.count) fetches")
                // And no two fetches of one credential fell within one freshness period: each made the
                // response fresh for 2 s from when it was asked for, on every replica.
                for (earlier, later) in zip(sorted, sorted.dropFirst()) {
                    #expect(
                        later - earlier >= .milliseconds(1_900),
                        "\(credential): fetched again after \(later - earlier)"
                    )
                }
                print("cache fleet: \(credential) fetched \(sorted.count) times in 5 s at max-age=2")
            }
        }
    }
}

/// One replica, when the test binary runs as one (``CacheFleetProcessTests``): an `HTTPCache` on a
/// `PostgresHTTPCacheStore` with the fleet's partition secret, through which 8 tasks request the resource with
/// two credentials in turn for `CACHE_FLEET_SECONDS`, checking that each gets its own credential's body.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[cacheFleetReplicaVariable] == "1"))
struct CacheFleetReplicaProcess {
    @Test func replica() async throws {
        let environment = ProcessInfo.processInfo.environment
        let table = try #require(environment["CACHE_FLEET_TABLE"])
        let api = try #require(environment["CACHE_FLEET_API"].flatMap(URL.init(string:)))
        let seconds = try #require(environment["CACHE_FLEET_SECONDS"].flatMap(Int.init))
        let secret = HTTPCache.PartitionSecret(Array("the cache fleet's shared secret".utf8))

        let postgres = PostgresClient(configuration: PostgresTestServer.configuration())
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            group.addTask { await postgres.run() }
            // A generous store timeout: on a machine busy with other tests, a slow answer is not a failure here.
            let store = try PostgresHTTPCacheStore(client: postgres, table: table, timeout: .seconds(10))
            let failures = Locked(0)
            let client = Client(
                baseURL: api,
                middleware: [
                    .caching(
                        HTTPCache(
                            store: store,
                            onEvent: { event in if event.kind == .storeFailed { failures.withLock { $0 += 1 } } },
                            partitionSecret: secret
                        )
                    )
                ]
            )
            let end = ContinuousClock.now + .seconds(seconds)
            let (calls, wrong) = await withTaskGroup(of: (Int, Int).self) { tasks in
                for index in 0..<8 {
                    tasks.addTask {
                        var (calls, wrong) = (0, 0)
                        var turn = index
                        while ContinuousClock.now < end {
                            let credential = turn % 2 == 0 ? "alice" : "bob"
                            turn += 1
                            var request = URLRequest(url: api.appendingPathComponent("report"))
                            request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
                            let body = try? await client.send(request).0
                            calls += 1
                            if body.map({ String(decoding: $0, as: UTF8.self) }) != "for Bearer \(credential)" {
                                wrong += 1
                            }
                            // Paces the load (each replica asks about 400 times a second), not synchronization.
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                        return (calls, wrong)
                    }
                }
                return await tasks.reduce(into: (0, 0)) {
                    $0.0 += $1.0
                    $0.1 += $1.1
                }
            }
            print(
                "cache replica: \(calls) calls, \(wrong) wrong bodies (failed calls included), \(failures.value) store failures"
            )
            #expect(calls > 0)
            #expect(wrong == 0)
        }
    }
}
#endif
