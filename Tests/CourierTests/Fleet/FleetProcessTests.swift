#if Postgres && os(Linux)
import Courier
import CourierTesting
import Foundation
import Glibc
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Replicas as real processes on one real PostgreSQL: the test binary starts copies of itself that run only
/// ``FleetReplicaProcess`` (the environment says which table, which API and how many calls), against a token
/// endpoint with refresh-token rotation and reuse detection that this process serves on 127.0.0.1.
@Suite(
    "A fleet of replica processes on PostgreSQL",
    .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipReason),
    .enabled(if: ProcessInfo.processInfo.environment[fleetReplicaVariable] == nil, "a replica itself"),
    .serialized,
    .timeLimit(.minutes(2))
)
struct FleetProcessTests {
    /// Starts `count` replica processes and returns what each printed and its exit status.
    private func runReplicas(
        _ count: Int,
        table: String,
        api: FleetAPI,
        calls: Int,
        lease: Duration
    ) async throws -> [ChildProcess.Result] {
        try await runReplicaProcesses(
            count,
            filter: "FleetReplicaProcess",
            environment: [
                fleetReplicaVariable: "1",
                "FLEET_TABLE": table,
                "FLEET_SEALING_KEY": PostgresTestServer.sealingKeyBase64,
                "FLEET_API": api.server.origin,
                "FLEET_CALLS": "\(calls)",
                "FLEET_LEASE_MS":
                    "\(lease.components.seconds * 1000 + lease.components.attoseconds / 1_000_000_000_000_000)",
            ]
        )
    }

    @Test(
        "8 replica processes × 250 concurrent calls with an expired token: one refresh in the fleet, no family revoked"
    )
    func oneRefreshAcrossProcesses() async throws {
        let api = try FleetAPI()
        defer { api.server.shutdown() }
        try await PostgresTestServer.withClient { client, table in
            try await PostgresSharedTokenStore(client: client, table: table, sealingKey: PostgresTestServer.sealingKey)
                .createTable()
            let results = try await runReplicas(8, table: table, api: api, calls: 250, lease: .seconds(30))
            for result in results {
                #expect(result.status == 0, "\(result.text.suffix(2_000))")
                #expect(result.text.contains("replica: 250 of 250 calls succeeded"), "\(result.text.suffix(2_000))")
            }
            #expect(api.refreshes == 1)
            #expect(api.reuses == 0)
            #expect(!api.isRevoked)
            #expect(api.acceptedCalls == 8 * 250)
            let store = try PostgresSharedTokenStore(
                client: client,
                table: table,
                sealingKey: PostgresTestServer.sealingKey
            )
            #expect(try await store.leasesTaken() == 1)
            #expect(try await store.token()?.value == "access-2")
        }
    }

    @Test("The replica holding the lease is killed mid-refresh: another refreshes once the lease ends, and only once")
    func killedLeaseHolder() async throws {
        let lease = Duration.seconds(2)
        try await PostgresTestServer.withClient { client, table in
            try await PostgresSharedTokenStore(client: client, table: table, sealingKey: PostgresTestServer.sealingKey)
                .createTable()
            // What the killed holder's lease has left when it is killed, on the database's clock.
            let leaseLeft = { @Sendable () -> Duration? in
                let query = PostgresQuery(
                    unsafeSQL: """
                        SELECT EXTRACT(EPOCH FROM (lease_expires_at - clock_timestamp()))::float8
                        FROM \(table) WHERE name = 'default'
                        """
                )
                for try await seconds in try await client.query(query).decode(Double.self) {
                    return .milliseconds(Int64(seconds * 1000))
                }
                return nil
            }
            let api = try FleetAPI(killFirstRefresher: true, leaseLeft: leaseLeft)
            defer { api.server.shutdown() }
            let results = try await runReplicas(4, table: table, api: api, calls: 20, lease: lease)

            // One process was killed by the signal; the three others had every call succeed.
            #expect(results.count { $0.status == SIGKILL } == 1, "\(results.map(\.status))")
            #expect(results.count { $0.status == 0 && $0.text.contains("replica: 20 of 20 calls succeeded") } == 3)
            #expect(api.refreshes == 1)
            #expect(api.reuses == 0)
            #expect(!api.isRevoked)
            // The killed holder's lease kept everyone else from refreshing until it ended: the successful refresh
            // was asked for no sooner than what the lease had left at the kill (read on the database's clock).
            let (killed, left, refreshed) = try #require(api.refreshTimes)
            #expect(left > .zero && left <= lease)
            #expect(refreshed - killed >= left - .milliseconds(20))
            print("fleet recovery after the lease holder was killed: \(refreshed - killed); its lease had \(left) left")
        }
    }
}

/// The environment variable that makes the test binary a replica (``FleetReplicaProcess``).
let fleetReplicaVariable = "COURIER_FLEET_REPLICA"

/// What the replicas call: an API that accepts only the current access token of a family not revoked, and its
/// token endpoint with rotation and reuse detection (a refresh token works once; presented again, it revokes the
/// family). The replicas start with `access-1`, which has expired.
final class FleetAPI: Sendable {
    private struct State {
        var generation = 1
        var refreshes = 0
        var reuses = 0
        var revoked = false
        var accepted = 0
        var killedAt: ContinuousClock.Instant?
        var leaseLeftAtKill: Duration?
        var refreshedAt: ContinuousClock.Instant?
    }

    private let state = Locked(State())
    let server: SocketServer

    var refreshes: Int { state.withLock { $0.refreshes } }
    var reuses: Int { state.withLock { $0.reuses } }
    var isRevoked: Bool { state.withLock { $0.revoked } }
    var acceptedCalls: Int { state.withLock { $0.accepted } }
    /// When the first refresher was killed, what its lease had left then, and when the refresh that succeeded
    /// was asked for.
    var refreshTimes: (ContinuousClock.Instant, Duration, ContinuousClock.Instant)? {
        state.withLock { state in
            guard let killed = state.killedAt, let left = state.leaseLeftAtKill, let refreshed = state.refreshedAt
            else { return nil }
            return (killed, left, refreshed)
        }
    }

    /// - Parameters:
    ///   - killFirstRefresher: Whether the first process to ask for a refresh is killed (SIGKILL) while its
    ///     request is in flight, before the endpoint rotates anything.
    ///   - leaseLeft: Reads what the refresh lease has left, just after the kill.
    init(
        killFirstRefresher: Bool = false,
        leaseLeft: @escaping @Sendable () async throws -> Duration? = { nil }
    ) throws {
        let state = self.state
        server = try SocketServer { request in
            if request.method == "POST", request.path == "/token" {
                let presented = String(decoding: request.body, as: UTF8.self)
                    .split(separator: "&").first { $0.hasPrefix("refresh_token=") }?.dropFirst("refresh_token=".count)
                let kill = state.withLock { state in
                    guard killFirstRefresher, state.killedAt == nil else { return false }
                    state.killedAt = .now
                    return true
                }
                if kill, let pid = request.header("X-Replica-PID").flatMap(Int32.init) {
                    Glibc.kill(pid, SIGKILL)
                    // This connection's thread may block: the server serves each connection on its own.
                    let read = DispatchSemaphore(value: 0)
                    Task {
                        let left = try? await leaseLeft()
                        state.withLock { $0.leaseLeftAtKill = left }
                        read.signal()
                    }
                    read.wait()
                    return .close
                }
                return state.withLock { state in
                    state.refreshes += 1
                    guard !state.revoked, presented.map(String.init) == "refresh-\(state.generation)" else {
                        state.reuses += 1
                        state.revoked = true
                        return .keepAlive(status: 400, body: Data(#"{"error":"invalid_grant"}"#.utf8))
                    }
                    state.generation += 1
                    state.refreshedAt = .now
                    let body =
                        #"{"access_token":"access-\#(state.generation)","refresh_token":"refresh-\#(state.generation)","expires_in":3600}"#
                    return .keepAlive(
                        status: 200,
                        headers: [.init(name: "Content-Type", value: "application/json")],
                        body: Data(body.utf8)
                    )
                }
            }
            return state.withLock { state in
                let current = "Bearer access-\(state.generation)"
                guard !state.revoked, state.generation > 1, request.header("Authorization") == current else {
                    return .keepAlive(status: 401)
                }
                state.accepted += 1
                return .keepAlive(status: 200, body: Data("{}".utf8))
            }
        }
    }
}

/// One replica, when the test binary runs as one (``FleetProcessTests``): a `TokenRefresher` sharing its token
/// through `PostgresSharedTokenStore`, behind which `FLEET_CALLS` calls go to the API at once.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[fleetReplicaVariable] == "1"))
struct FleetReplicaProcess {
    struct TokenReply: Decodable {
        var access_token: String
        var refresh_token: String
        var expires_in: Int
    }

    @Test func replica() async throws {
        let environment = ProcessInfo.processInfo.environment
        let table = try #require(environment["FLEET_TABLE"])
        let sealingKey = try PostgresSharedTokenStore.SealingKey(base64: try #require(environment["FLEET_SEALING_KEY"]))
        let api = try #require(environment["FLEET_API"].flatMap(URL.init(string:)))
        let calls = try #require(environment["FLEET_CALLS"].flatMap(Int.init))
        let lease = Duration.milliseconds(try #require(environment["FLEET_LEASE_MS"].flatMap(Int64.init)))
        let pid = "\(ProcessInfo.processInfo.processIdentifier)"

        let postgres = PostgresClient(configuration: PostgresTestServer.configuration())
        try await withThrowingTaskGroup(of: Void.self) { group in
            defer { group.cancelAll() }
            group.addTask { await postgres.run() }
            let store = try PostgresSharedTokenStore(client: postgres, table: table, sealingKey: sealingKey)
            let tokenClient = Client(baseURL: api)
            // A generous store timeout: eight replica processes start at once on two cores, and a replica whose
            // beginRefresh gave up at the default 5 s would refresh on its own (as documented) and revoke the family,
            // which is not what these tests are about (the outage tests are).
            let refresher = TokenRefresher(
                token: .init("access-1", refreshToken: "refresh-1"),
                sharing: .init(store: store, lease: lease, storeTimeout: .seconds(30))
            ) { replaced in
                var request = Request<TokenReply>.post(
                    "/token",
                    body: .form(["grant_type": "refresh_token", "refresh_token": replaced.refreshToken ?? ""])
                )
                request.headers["X-Replica-PID"] = pid
                let reply = try await tokenClient.send(request)
                return .init(
                    reply.access_token,
                    expiresIn: .seconds(reply.expires_in),
                    refreshToken: reply.refresh_token
                )
            }
            let client = Client(baseURL: api, middleware: [.authenticating(with: refresher)])
            let succeeded = await withTaskGroup(of: Bool.self) { tasks in
                for _ in 0..<calls {
                    tasks.addTask {
                        (try? await client.send(URLRequest(url: api.appendingPathComponent("data"))))?.1.statusCode
                            == 200
                    }
                }
                return await tasks.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            print("replica: \(succeeded) of \(calls) calls succeeded")
            #expect(succeeded == calls)
        }
    }
}
#endif
