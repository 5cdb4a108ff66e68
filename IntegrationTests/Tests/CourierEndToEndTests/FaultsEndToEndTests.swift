import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Large bodies, broken connections and cancellation over real sockets", .endToEndLimit(minutes: 2))
struct FaultsEndToEndTests {
    @Test(
        "A large body arrives whole, in order, up to the maximum response size; a byte more is bodyTooLarge",
        arguments: TransportKind.allCases,
        [false, true]
    )
    func largeBody(kind: TransportKind, chunked: Bool) async throws {
        try await EndToEnd.run(kind) { e2e in
            // Several of the server's 64 KiB writes and an odd tail; the debug-built server makes each byte
            // on its own, so bigger bodies only slow the suite down.
            let count = 5 * 64 * 1024 + 7
            let client = Client(transport: kind.make(maximumResponseSize: count), middleware: [.validatingStatus()])
            let query: KeyValuePairs<String, String> = chunked ? ["chunked": "1"] : [:]
            let (data, response) = try await client.send(
                URLRequest(url: e2e.server.url("/large/\(count)", query: query))
            )
            #expect(response.statusCode == 200)
            #expect(data.count == count)
            #expect(data == TestServers.largeBody(count: count))

            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: e2e.server.url("/large/\(count + 1)", query: query)))
            }
            #expect(error.code == .bodyTooLarge)
        }
    }

    @Test("A connection closed mid-body is a transport error, not a short body", arguments: TransportKind.allCases)
    func truncatedBody(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let error = try await #require(throws: CourierError.self) {
                try await e2e.client().send(URLRequest(url: e2e.server.url("/truncated")))
            }
            #expect(error.code == .transport)
            #expect(error.underlying != nil)
        }
    }

    @Test(
        "A connection closed mid-body is a transport error for a streamed body too, not the client's own error",
        arguments: TransportKind.allCases
    )
    func truncatedStream(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let (body, _) = try await e2e.client().stream(URLRequest(url: e2e.server.url("/truncated")))
            let error = try await #require(throws: CourierError.self) { _ = try await body.collect(upTo: 1 << 20) }
            #expect(error.code == .transport)
            #expect(error.message.contains("was lost"))
            #expect(error.underlying != nil)
        }
    }

    @Test("Cancelling a call closes its connection: the server sees /hang end", arguments: TransportKind.allCases)
    func cancellationClosesConnection(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let call = Task { try await client.send(e2e.hang) }
            _ = try await e2e.inspector.wait(e2e.key, ["hanging": 1])

            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.join() }
            try await e2e.expectHangsEnded(1)
        }
    }
}
