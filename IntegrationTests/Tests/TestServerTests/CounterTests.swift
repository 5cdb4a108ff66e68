import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Counters", .timeLimit(.minutes(3)))
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
            let url = server.url("/wait/\(key)?hits=3")
            let waiter = Task { try await HTTP.send(url) }
            for _ in 0..<3 {
                _ = try await HTTP.send(server.url("/hit/\(key)"))
            }
            var (data, response) = try await waiter.value
            // A loaded machine may take longer than the long poll's 5 seconds to send three hits: poll again.
            for _ in 1..<6 where response.value(forHTTPHeaderField: "X-Wait-Ended") == "timeout" {
                (data, response) = try await HTTP.send(url)
            }
            #expect(response.statusCode == 200)
            #expect(response.value(forHTTPHeaderField: "X-Wait-Ended") == "met")
            #expect(try JSONDecoder().decode(CounterSnapshot.self, from: data).hits == 3)
        }
    }

    @Test("/wait/:key answers 408 with the counters when the timeout runs out first")
    func waitTimesOut() async throws {
        try await TestServers.withServer { server in
            let key = UUID().uuidString
            _ = try await HTTP.send(server.url("/hit/\(key)"))
            let (data, response) = try await HTTP.send(server.url("/wait/\(key)?hits=2&timeoutMs=20"))
            #expect(response.statusCode == 408)
            #expect(response.value(forHTTPHeaderField: "X-Wait-Ended") == "timeout")
            #expect(try JSONDecoder().decode(CounterSnapshot.self, from: data).hits == 1)
            let (_, refused) = try await HTTP.send(server.url("/wait/\(key)?hits=2&timeoutMs=60001"))
            #expect(refused.statusCode == 400)
        }
    }

    @Test("/wait/:key counts its long polls in `waiting`, and shutdown releases them at once")
    func waitReleasedByShutdown() async throws {
        let server = try await TestServers.start()
        let key = UUID().uuidString
        // Its timer is far longer than any stall of a loaded machine, so only the shutdown can end it in time.
        let waiter = Task { try await HTTP.send(server.url("/wait/\(key)?hits=1&timeoutMs=60000")) }
        // A second long poll tells us when the first is in place (in a few rounds, on a loaded machine).
        var (data, response) = try await HTTP.send(server.url("/wait/\(key)?waiting=1"))
        for _ in 1..<6 where response.statusCode != 200 {
            (data, response) = try await HTTP.send(server.url("/wait/\(key)?waiting=1"))
        }
        #expect(try JSONDecoder().decode(CounterSnapshot.self, from: data).waiting == 1)

        await server.shutdown()
        // The server says why the long poll ended: the shutdown released it, its timer did not.
        let (body, released) = try await waiter.value
        #expect(released.statusCode == 408)
        #expect(released.value(forHTTPHeaderField: "X-Wait-Ended") == "shutdown")
        let snapshot = try JSONDecoder().decode(CounterSnapshot.self, from: body)
        #expect(snapshot.hits == 0)
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
