// Consume a Server-Sent Events stream, as from an LLM or a realtime API: `client.events` reads the events as
// they arrive and, when the connection drops, connects again after the server's `retry:` delay with
// `Last-Event-ID`, through the same middleware as every other call (here, a token refreshed once).
//
// The server is in memory: its first connection sends two events and drops, the second (which must carry
// `Last-Event-ID: 2`) sends the rest, and a third gets `204 No Content`, which ends the stream.

// snippet.hide
import Courier
import CourierTesting
import Foundation

let server = MockTransport { request in
    guard request.header("Authorization") == "Bearer fresh-token" else { return .unauthorized() }
    switch request.header("Last-Event-ID") {
    case nil:
        return .events([
            .event("{\"delta\":\"Hello\"}", type: "token", id: "1", retry: .milliseconds(50)),
            .event("{\"delta\":\", wor\"}", type: "token", id: "2"),
            .drop(),  // the connection is lost here
        ])
    case "2":
        return .events([.event("{\"delta\":\"ld\"}", type: "token", id: "3"), .event("", type: "done", id: "4")])
    default:
        return .noContent
    }
}
let refresher = TokenRefresher(token: .init("expired-token", expiresIn: .zero)) { _ in .init("fresh-token") }
// snippet.show

let client = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: server,
    middleware: [.authenticating(with: refresher), .validatingStatus()]
)

var text = ""
for try await event in client.events(.get("/v1/chat/stream"), idleTimeout: .seconds(30)) {
    switch event.type {
    case "token":
        struct Delta: Decodable { let delta: String }
        text += try JSONDecoder().decode(Delta.self, from: Data(event.data.utf8)).delta
        print("event \(event.id ?? "-"): \(text)")
    case "done":
        print("done after \(server.requests.count) connections and \(refresher.refreshCount) token refresh")
    default:
        continue
    }
}
