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
    .timeLimit(.minutes(5))
)
struct FanOutServiceTests {
    /// The status and body a caller got.
    struct Outcome: Sendable {
        var status: Int
        var body: Data
    }

    /// What caller `index` is set up to get: one in ten has an upstream part that fails on every attempt
    /// (502), one in forty a part that never answers (504), two in ten a part that fails twice and then
    /// recovers (200), the rest nothing wrong (200).
    static func scenario(_ index: Int) -> (status: Int, reason: String?, query: Query) {
        switch index % 10 {
        case 3: (502, "upstream", ["failures": 4])
        case 7 where index % 40 == 7: (504, "timeout", ["hangs": 1])
        case 1, 5: (200, nil, ["failures": 2])
        default: (200, nil, [:])
        }
    }

    @Test(
        "1,000 callers see only the documented answers; one refresh per revoked token; the counter returns to 0",
        arguments: TransportKind.allCases
    )
    func thousandCallers(kind: TransportKind) async throws {
        try await TestServers.withServer(name: "upstream") { upstream in
            let realm = uniqueKey()
            let service = FanOutService(
                upstream: upstream.baseURL,
                realm: realm,
                transport: kind.make(),
                attemptTimeout: .seconds(1)
            )
            try await service.withRunning { origin in
                let callers = Client(baseURL: origin, transport: kind.make())
                let runID = uniqueKey()
                let requests = (0..<1000).map { index in
                    Request<Outcome>(
                        method: .get,
                        target: .path("/fan-out/\(runID)-\(index)"),
                        query: Self.scenario(index).query.items,
                        acceptableStatus: 200..<600
                    ) { data, response, _ in Outcome(status: response.statusCode, body: data) }
                }
                var outcomes = [Outcome?](repeating: nil, count: requests.count)
                var answered = 0
                try await callers.sendEach(requests, maxConcurrency: 64) { index, result in
                    outcomes[index] = try result.get()
                    answered += 1
                    // Halfway, the upstream revokes the service's token: the next rejections refresh it once.
                    if answered == 500 {
                        let revoke = Client(baseURL: upstream.baseURL, transport: URLSessionTransport())
                        let expired: [String: Bool] = try await revoke.send(.post("/auth/\(realm)/expire"))
                        #expect(expired == ["expired": true])
                    }
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
            }
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
}
