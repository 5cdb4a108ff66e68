import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Counters", .timeLimit(.minutes(1)))
struct CounterTests {
    @Test("/hit/:key counts each request and /count/:key reads without counting")
    func hitAndCount() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)")) == CounterSnapshot(key: key))
            let first = try await HTTP.json(CounterSnapshot.self, server.url("/hit/\(key)"), method: "POST")
            let second = try await HTTP.json(CounterSnapshot.self, server.url("/hit/\(key)"), method: "DELETE")
            #expect(first.hits == 1)
            #expect(second.hits == 2)
            #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)")).hits == 2)
            #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)")).hits == 2)
        }
    }

    @Test("Any request counts under ?countKey= or an X-Count-Key header")
    func countKeyOnAnyEndpoint() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            _ = try await HTTP.send(server.url("/status/500", query: ["countKey": key]), method: "POST")
            _ = try await HTTP.send(server.url("/json"), headers: [("X-Count-Key", key)])
            _ = try await HTTP.send(server.url("/echo"), method: "PUT", headers: [("x-count-key", key)])
            // A redirect keeps the query on the chain, so each hop counts.
            _ = try await HTTP.send(server.url("/redirect-chain/2", query: ["countKey": key]), followRedirects: true)
            let counters = try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)"))
            #expect(counters.hits == 6)
        }
    }

    @Test("Keys keep their own counts when requests for many keys run in parallel")
    func parallelKeysDoNotInterfere() async throws {
        try await TestServers.withServer { server in
            let keys = (0..<8).map { _ in UUID().uuidString }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, key) in keys.enumerated() {
                    for _ in 0...index {
                        group.addTask { _ = try await HTTP.send(server.url("/hit/\(key)")) }
                    }
                }
                try await group.waitForAll()
            }
            for (index, key) in keys.enumerated() {
                #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)")).hits == index + 1)
            }
        }
    }

    @Test("/wait/:key answers once the counters reach the values asked for")
    func waitSucceeds() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            let waiter = Task {
                try await HTTP.json(CounterSnapshot.self, server.url("/wait/\(key)?hits=3"))
            }
            for _ in 0..<3 {
                _ = try await HTTP.send(server.url("/hit/\(key)"))
            }
            let snapshot = try await waiter.value
            #expect(snapshot.hits == 3)
        }
    }

    @Test("/wait/:key answers 408 with the counters when the timeout runs out first")
    func waitTimesOut() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            _ = try await HTTP.send(server.url("/hit/\(key)"))
            let snapshot = try await HTTP.json(
                CounterSnapshot.self,
                server.url("/wait/\(key)?hits=2&timeoutMs=20"),
                expectStatus: 408
            )
            #expect(snapshot.hits == 1)
            let (_, refused) = try await HTTP.send(server.url("/wait/\(key)?hits=2&timeoutMs=60000"))
            #expect(refused.statusCode == 400)
        }
    }

    @Test("/wait/:key counts its long polls in `waiting`, and shutdown releases them at once")
    func waitReleasedByShutdown() async throws {
        let server = try await TestServers.start()
        let key = UUID().uuidString
        let waiter = Task {
            try await HTTP.json(
                CounterSnapshot.self,
                server.url("/wait/\(key)?hits=1&timeoutMs=5000"),
                expectStatus: 408
            )
        }
        // A second long poll tells us when the first is in place.
        let inPlace = try await HTTP.json(CounterSnapshot.self, server.url("/wait/\(key)?waiting=1"))
        #expect(inPlace.waiting == 1)

        let clock = ContinuousClock()
        let start = clock.now
        await server.shutdown()
        // Well under the long poll's 5 s timeout (and the server's grace period): the waiter was
        // released by the shutdown, not by its timer.
        #expect(clock.now - start < .seconds(4))
        let released = try await waiter.value
        #expect(released.hits == 0)
    }

    @Test("POST /reset forgets every counter and realm")
    func reset() async throws {
        try await TestServers.withServer { server in
            _ = try await HTTP.send(server.url("/hit/k"))
            _ = try await HTTP.send(server.url("/auth/r/token"), method: "POST")
            let (_, response) = try await HTTP.send(server.url("/reset"), method: "POST")
            #expect(response.statusCode == 204)
            #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/k")).hits == 0)
            #expect(try await HTTP.json(AuthStats.self, server.url("/auth/r/stats")).issued == 0)
        }
    }
}
