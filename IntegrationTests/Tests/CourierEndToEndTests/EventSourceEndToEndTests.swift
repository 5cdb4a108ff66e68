import Courier
import Foundation
import TestServer
import Testing

/// `client.events` over both transports against the test server's `/stream/events`, which closes the connection
/// after each batch and answers by the `Last-Event-ID` it receives.
@Suite("Server-Sent Events over real sockets")
struct EventSourceEndToEndTests {
    @Test(
        "events reconnect after the server closes, with Last-Event-ID and the server's retry delay, until a 204",
        .timeLimit(.minutes(1)),
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
}
