import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `client.events` over both transports against the test server's `/stream/events`, which closes the connection
/// after each batch and answers by the `Last-Event-ID` it receives, and `/stream/auth-events/:realm`, which does the
/// same behind a bearer token that it expires under 100 open streams.
@Suite("Server-Sent Events over real sockets", .endToEndLimit(minutes: 3))
struct EventSourceEndToEndTests {
    @Test(
        "events reconnect after the server closes, with Last-Event-ID and the server's retry delay, until a 204",
        arguments: TransportKind.allCases
    )
    func reconnectsUntilNoContent(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            var events: [ServerSentEvent] = []
            for try await event in client.events(.get(e2e.server.url("/stream/events"))) {
                events.append(event)
            }
            #expect(events.map(\.data) == ["one", "two", "three"])
            #expect(events.map(\.id) == ["1", "2", "3"])
            #expect(events.first?.retry == .milliseconds(10))
        }
    }

    @Test(
        "a connection cut in the middle of an event is made again with Last-Event-ID; the half event is dropped",
        arguments: TransportKind.allCases
    )
    func reconnectsAfterCut(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            var events: [ServerSentEvent] = []
            let source = e2e.client().events(
                .get(e2e.server.url("/stream/cut-events")),
                reconnection: .init(delay: .zero)
            )
            for try await event in source {
                events.append(event)
            }
            #expect(events.map(\.data) == ["one", "two", "three"])
            #expect(events.map(\.id) == ["1", "2", "3"])
        }
    }

    @Test(
        "100 streams whose token expires meet a 401 on reconnecting: one refresh for all, each resumes by Last-Event-ID",
        arguments: TransportKind.allCases
    )
    func oneRefreshForAllStreams(kind: TransportKind) async throws {
        let streams = 100
        try await EndToEnd.run(kind) { e2e in
            let realm = e2e.key
            let inspector = e2e.inspector
            let tokenClient = e2e.client([.validatingStatus()])
            let first: TokenResponse = try await tokenClient.send(.post("/auth/\(realm)/token"))
            let refresher = TokenRefresher(token: .init(first.token)) { _ in
                // Held until the server has turned away every stream's reconnection: all of them wait on this one
                // refresh, none reconnects after it with the new token without having met the 401.
                let rejected = try await inspector.wait("\(realm).rejected", ["hits": streams])
                #expect(rejected.hits == streams)
                let reply: TokenResponse = try await tokenClient.send(.post("/auth/\(realm)/token"))
                return .init(reply.token)
            }
            let counter = RequestCounter()
            // Every first connection stays open until all of them are: the transport must allow that many.
            let client = e2e.client(
                [.counting(counter), .authenticating(with: refresher), .validatingStatus()],
                connections: streams
            )
            let request = Request<Data>.get(
                "/stream/auth-events/\(realm)",
                query: Query([URLQueryItem(name: "streams", value: String(streams))])
            )
            let received = try await withThrowingTaskGroup(of: [ServerSentEvent].self) { group in
                for _ in 0..<streams {
                    group.addTask {
                        var events: [ServerSentEvent] = []
                        for try await event in client.events(request, reconnection: .init(delay: .zero)) {
                            events.append(event)
                        }
                        return events
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(received.count == streams)
            // Every stream has every event once, in order: it resumed after event 2 (Last-Event-ID: 2) and after
            // event 4 (Last-Event-ID: 4, answered 204), never from the start.
            for events in received {
                #expect(events.map(\.id) == ["1", "2", "3", "4"])
                #expect(events.map(\.data) == ["one", "two", "three", "four"])
            }
            #expect(refresher.refreshCount == 1)
            let stats = try await e2e.inspector.authStats(realm)
            #expect(stats.refreshes == 1)
            #expect(stats.rejected == streams)
            // The first connection, the resumed one after the refresh, and the last one (204) of each stream.
            #expect(stats.accepted == 3 * streams)
            await counter.waitUntilIdle()
            #expect(counter.snapshot.inFlight == 0)
        }
    }
}
