import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Large bodies, broken connections and cancellation over real sockets", .timeLimit(.minutes(2)))
struct FaultsEndToEndTests {
    @Test(
        "A large body arrives whole and in order, with or without Content-Length",
        arguments: TransportKind.allCases,
        [false, true]
    )
    func largeBody(kind: TransportKind, chunked: Bool) async throws {
        try await TestServers.withServer { server in
            // Several of the server's 64 KiB writes and an odd tail; the debug-built server makes each byte
            // on its own, so bigger bodies only slow the suite down.
            let count = 5 * 64 * 1024 + 7
            let client = Client(transport: kind.make(), middleware: [.validatingStatus()])
            let url = server.url("/large/\(count)", query: chunked ? ["chunked": "1"] : [:])
            let (data, response) = try await client.send(URLRequest(url: url))
            #expect(response.statusCode == 200)
            #expect(data.count == count)
            #expect(data == TestServers.largeBody(count: count))
        }
    }

    @Test(
        "A body over the transport's maximum response size fails with bodyTooLarge, with or without Content-Length",
        arguments: TransportKind.allCases,
        [false, true]
    )
    func maximumResponseSize(kind: TransportKind, chunked: Bool) async throws {
        try await TestServers.withServer { server in
            let client = Client(transport: kind.make(maximumResponseSize: 100_000))
            let url = server.url("/large/250000", query: chunked ? ["chunked": "1"] : [:])
            let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
            #expect(error.code == .bodyTooLarge)

            // At the limit exactly, the body is accepted.
            let (data, _) = try await client.send(URLRequest(url: server.url("/large/100000")))
            #expect(data.count == 100_000)
        }
    }

    @Test("A connection closed mid-body is a transport error, not a short body", arguments: TransportKind.allCases)
    func truncatedBody(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let client = Client(transport: kind.make())
            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: server.url("/truncated")))
            }
            #expect(error.code == .transport)
            #expect(error.underlying != nil)
        }
    }

    @Test("Cancelling a call closes its connection: the server sees /hang end", arguments: TransportKind.allCases)
    func cancellationClosesConnection(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let inspector = Inspector(server)
            let client = Client(transport: kind.make())
            let call = Task { try await client.send(URLRequest(url: server.url("/hang", query: ["key": key]))) }
            _ = try await inspector.wait(key, ["hanging": 1])

            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            let ended = try await inspector.wait(key, ["hangsEnded": 1])
            #expect(ended.hangsEnded == 1)
        }
    }
}
