import Courier
import FanOutService
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(
    "The FanOutService example under load, with injected upstream faults",
    .serialized,  // one transport at a time: each case is 1,000 callers and about 4,000 upstream calls
    // With no other test's server running: the service's timeouts are real, and beside the other suites (all
    // starting at once on two cores) an upstream call took up to 22 seconds instead of milliseconds.
    .runsAlone,
    .timeLimit(.minutes(5))
)
struct FanOutServiceTests {
    /// The status and body a caller got.
    struct Outcome: Sendable {
        var status: Int
        var body: Data
    }

    /// What caller `index` is set up to get: one in ten has an upstream part that fails on every attempt
    /// (502), one in a hundred a part that never answers (504), two in ten a part that fails twice and then
    /// recovers (200), the rest nothing wrong (200).
    static func scenario(_ index: Int) -> (status: Int, reason: String?, query: Query) {
        switch index % 10 {
        case 3: (502, "upstream", ["failures": 4])
        case 7 where index % 100 == 7: (504, "timeout", ["hangs": 1])
        case 1, 5: (200, nil, ["failures": 2])
        default: (200, nil, [:])
        }
    }

    @Test(
        "1,000 concurrent callers see only the documented answers; one refresh per revoked token; the counter returns to 0",
        arguments: TransportKind.allCases
    )
    func thousandCallers(kind: TransportKind) async throws {
        try await TestServers.withServer(name: "upstream") { upstream in
            let realm = uniqueKey()
            // The service keeps up to 128 connections to the upstream, more than its parts in flight (below), so
            // an upstream call never waits for a connection and an attempt takes an answer's time. Its timeouts
            // (5 seconds an attempt, 30 a call) are far above that on a machine under heavy load, and still let
            // a part that never answers end in 504, after its 4 attempts.
            let service = FanOutService(
                upstream: upstream.baseURL,
                realm: realm,
                transport: kind.make(connections: 128),
                callTimeout: .seconds(30),
                attemptTimeout: .seconds(5)
            )
            try await TestServers.withServer(name: "fan-out", router: service.makeRouter(), services: service.services)
            {
                server in
                let origin = server.baseURL
                // Every caller is held just inside its client until all 1,000 are in flight there, then all are
                // let go at once. The callers' transport opens at most 32 connections to the service, so the
                // service sees at most 32 requests at a time (up to 4 upstream parts each) while the other
                // callers wait for a connection in the transport's queue, without a deadline: all 1,000 are in
                // flight from the callers' side, and the service's timeouts start only when it gets a request,
                // as with a real service behind a connection-pooling client.
                let callerCounter = RequestCounter()
                let muster = Muster(count: 1000)
                let callers = Client(
                    baseURL: origin,
                    transport: kind.make(connections: 32),
                    middleware: [.counting(callerCounter), muster.middleware]
                )
                let runID = uniqueKey()
                let requests = (0..<1000).map { index in
                    Request<Outcome>(
                        method: .get,
                        target: .path("/fan-out/\(runID)-\(index)"),
                        query: Self.scenario(index).query.items,
                        acceptableStatus: 200..<600
                    ) { data, response, _ in Outcome(status: response.statusCode, body: data) }
                }
                let outcomes = try await withThrowingTaskGroup(of: (Int, Outcome).self) { group in
                    for (index, request) in requests.enumerated() {
                        group.addTask { (index, try await callers.send(request)) }
                    }
                    await muster.releaseWhenAllArrived()

                    var outcomes = [Outcome?](repeating: nil, count: requests.count)
                    var answered = 0
                    for try await (index, outcome) in group {
                        outcomes[index] = outcome
                        answered += 1
                        // Halfway, the upstream revokes the service's token: the next rejections refresh it once.
                        if answered == requests.count / 2 {
                            let expired = try await Self.revoke(realm, at: upstream)
                            #expect(expired == ["expired": true])
                        }
                    }
                    return outcomes
                }

                for (index, outcome) in outcomes.enumerated() {
                    let outcome = try #require(outcome)
                    let expected = Self.scenario(index)
                    #expect(
                        outcome.status == expected.status,
                        "caller \(index): \(String(decoding: outcome.body, as: UTF8.self))"
                    )
                    if let reason = expected.reason {
                        let failure = try JSONDecoder().decode(FanOutFailure.self, from: outcome.body)
                        #expect(failure.reason == reason, "caller \(index): \(failure)")
                    } else if outcome.status == 200 {
                        let reply = try JSONDecoder().decode(FanOutReply.self, from: outcome.body)
                        #expect(reply.parts == 3, "caller \(index)")
                    }
                }
                #expect(callerCounter.snapshot.peak == requests.count)

                // One more call after the revocation, in case every upstream call had gone out before it.
                let last = try await callers.send(
                    Request<Outcome>(
                        method: .get,
                        target: .path("/fan-out/\(runID)-last"),
                        acceptableStatus: 200..<600
                    ) { data, response, _ in Outcome(status: response.statusCode, body: data) }
                )
                #expect(last.status == 200, "\(String(decoding: last.body, as: UTF8.self))")
            }
            // The server's graceful shutdown then shut the client down (it runs in the same ServiceGroup).
            #expect(service.client.isShutDown)
            // The service answered everybody: no upstream call is left in flight.
            await service.counter.waitUntilIdle()
            let counts = service.counter.snapshot
            #expect(counts.inFlight == 0)
            #expect(counts.started == counts.finished)
            // The first token (the service starts without one) and one after the revocation.
            let stats = try await Inspector(upstream).authStats(realm)
            #expect(stats.issued == 2)
            #expect(service.refresher.refreshCount == 2)
        }
    }

    /// Makes the upstream reject the realm's current token from now on.
    static func revoke(_ realm: String, at upstream: RunningServer) async throws -> [String: Bool] {
        let client = Client(baseURL: upstream.baseURL, transport: TransportKind.urlSession.make())
        return try await client.send(.post("/auth/\(realm)/expire"))
    }
}
