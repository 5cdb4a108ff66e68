import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Fan-out and flow control over real sockets", .endToEndLimit(minutes: 3))
struct FanOutEndToEndTests {
    @Test("sendAll: 1,000 concurrent requests, each answered in input order", arguments: TransportKind.allCases)
    func sendAllThousand(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let counter = RequestCounter()
            let muster = Muster(count: 1000)
            // All 1,000 are in flight in the client at once (one child task each, held until all have started).
            // The transport opens up to 64 connections, so the server sees up to 64 requests at a time while the
            // rest wait in the transport's queue for a connection.
            let client = e2e.client([.counting(counter), muster.middleware], connections: 64)
            let requests = (0..<1000).map { Request<User>.get("/users/\($0)", query: ["countKey": .init(e2e.key)]) }
            async let sent = client.sendAll(requests, maxConcurrency: requests.count)
            await muster.releaseWhenAllArrived()
            let results = await sent
            let ids = try results.map { try $0.get().id }
            #expect(ids == Array(0..<1000))
            #expect(try await e2e.inspector.counters(e2e.key).hits == 1000)
            await counter.waitUntilIdle()
            #expect(counter.snapshot.succeeded == 1000)
            #expect(counter.snapshot.peak == 1000)
        }
    }

    @Test("limitingConcurrency holds the server at the limit while more calls wait", arguments: TransportKind.allCases)
    func limiterHoldsServerAtLimit(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.limitingConcurrency(maxInFlight: 3)])
            let calls = Task { await client.sendAll(Array(repeating: e2e.hang, count: 10), maxConcurrency: 10) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 3])
            // A fourth would arrive within this window if the limiter let it through.
            #expect(try await e2e.inspector.reaches(e2e.key, ["hanging": 4], timeoutMs: 300) == false)

            await expectAllCancelled(calls)
            try await e2e.expectHangsEnded(3)
        }
    }

    @Test(
        "The circuit breaker opens after repeated 5xx and then stops calling the server",
        arguments: TransportKind.allCases
    )
    func circuitBreakerOpens(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.circuitBreaker(failureThreshold: 3, cooldown: .seconds(60))])
            let request = URLRequest(url: e2e.server.url("/status/503", query: ["countKey": e2e.key]))
            for _ in 0..<3 {
                let (_, response) = try await client.send(request)
                #expect(response.statusCode == 503)
            }
            let error = try await #require(throws: CourierError.self) { try await client.send(request) }
            #expect(error.code == .circuitOpen)
            #expect(try await e2e.inspector.counters(e2e.key).hits == 3)
        }
    }

    @Test("Coalescing: identical concurrent GETs share one server call", arguments: TransportKind.allCases)
    func coalescing(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let coalescer = RequestCoalescer()
            let client = e2e.client([.coalescing(coalescer)])
            // The first call hangs on the server; the others join it while it is in flight.
            let calls = Task { await client.sendAll(Array(repeating: e2e.hang, count: 20), maxConcurrency: 20) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1])
            #expect(try await e2e.inspector.reaches(e2e.key, ["hanging": 2], timeoutMs: 300) == false)
            #expect(coalescer.sharedCalls == 1)

            // The shared call is cancelled once every caller has gone: the server sees its connection close.
            await expectAllCancelled(calls)
            #expect(coalescer.sharedCalls == 0)
            try await e2e.expectHangsEnded(1)
        }
    }
}
