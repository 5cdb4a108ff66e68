import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Fan-out and flow control over real sockets", .timeLimit(.minutes(3)))
struct FanOutEndToEndTests {
    @Test("sendAll: 1,000 concurrent requests, each answered in input order", arguments: TransportKind.allCases)
    func sendAllThousand(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let counter = RequestCounter()
            let muster = Muster(count: 1000)
            // All 1,000 are in flight in the client at once (one child task each, held until all have started).
            // The transport opens up to 64 connections, so the server sees up to 64 requests at a time while the
            // rest wait in the transport's queue for a connection.
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(connections: 64),
                middleware: [.counting(counter), muster.middleware]
            )
            let requests = (0..<1000).map { Request<User>.get("/users/\($0)", query: ["countKey": .init(key)]) }
            async let sent = client.sendAll(requests, maxConcurrency: requests.count)
            await muster.releaseWhenAllArrived()
            let results = await sent
            let ids = try results.map { try $0.get().id }
            #expect(ids == Array(0..<1000))
            #expect(try await Inspector(server).counters(key).hits == 1000)
            await counter.waitUntilIdle()
            #expect(counter.snapshot.succeeded == 1000)
            #expect(counter.snapshot.peak == 1000)
        }
    }

    @Test("limitingConcurrency holds the server at the limit while more calls wait", arguments: TransportKind.allCases)
    func limiterHoldsServerAtLimit(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let inspector = Inspector(server)
            let client = Client(transport: kind.make(), middleware: [.limitingConcurrency(maxInFlight: 3)])
            let url = server.url("/hang", query: ["key": key])
            let calls = Task {
                await client.sendAll(Array(repeating: URLRequest(url: url), count: 10), maxConcurrency: 10)
            }
            _ = try await inspector.wait(key, ["hanging": 3])
            // A fourth would arrive within this window if the limiter let it through.
            #expect(try await inspector.reaches(key, ["hanging": 4], timeoutMs: 300) == false)

            calls.cancel()
            let results = await calls.value
            #expect(
                results.allSatisfy { if case .failure(let error) = $0 { error is CancellationError } else { false } }
            )
            let ended = try await inspector.wait(key, ["hangsEnded": 3])
            #expect(ended.hanging == 0)
        }
    }

    @Test(
        "The circuit breaker opens after repeated 5xx and then stops calling the server",
        arguments: TransportKind.allCases
    )
    func circuitBreakerOpens(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = Client(
                transport: kind.make(),
                middleware: [.circuitBreaker(failureThreshold: 3, cooldown: .seconds(60))]
            )
            let request = URLRequest(url: server.url("/status/503", query: ["countKey": key]))
            for _ in 0..<3 {
                let (_, response) = try await client.send(request)
                #expect(response.statusCode == 503)
            }
            let error = try await #require(throws: CourierError.self) { try await client.send(request) }
            #expect(error.code == .circuitOpen)
            #expect(try await Inspector(server).counters(key).hits == 3)
        }
    }

    @Test("Coalescing: identical concurrent GETs share one server call", arguments: TransportKind.allCases)
    func coalescing(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let inspector = Inspector(server)
            let coalescer = RequestCoalescer()
            let client = Client(transport: kind.make(), middleware: [.coalescing(coalescer)])
            let url = server.url("/hang", query: ["key": key])
            // The first call hangs on the server; the others join it while it is in flight.
            let calls = Task {
                await client.sendAll(Array(repeating: URLRequest(url: url), count: 20), maxConcurrency: 20)
            }
            _ = try await inspector.wait(key, ["hanging": 1])
            #expect(try await inspector.reaches(key, ["hanging": 2], timeoutMs: 300) == false)
            #expect(coalescer.sharedCalls == 1)

            // The shared call is cancelled once every caller has gone: the server sees its connection close.
            calls.cancel()
            let results = await calls.value
            #expect(
                results.allSatisfy { if case .failure(let error) = $0 { error is CancellationError } else { false } }
            )
            #expect(coalescer.sharedCalls == 0)
            let ended = try await inspector.wait(key, ["hangsEnded": 1])
            #expect(ended.hanging == 0)
        }
    }
}
