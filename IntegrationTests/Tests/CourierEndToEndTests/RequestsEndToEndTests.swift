import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Typed requests, headers and status validation over real sockets", .endToEndLimit(minutes: 2))
struct RequestsEndToEndTests {
    @Test("A typed GET decodes the server's JSON", arguments: TransportKind.allCases)
    func typedGet(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let user: User = try await client.send(.get("/users/42"))
            #expect(user == User(id: 42, name: "Ada"))
        }
    }

    @Test("A POST sends its JSON body, query and headers as they are", arguments: TransportKind.allCases)
    func postEcho(kind: TransportKind) async throws {
        struct Payload: Encodable, Sendable { var text: String }
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.headers(["X-Client": "courier"]), .authenticating(token: "t0ken")])
            let echo: EchoResponse = try await client.send(
                .post("/echo/items", json: Payload(text: "héllo & bye"), query: ["q": "a b&c"])
            )
            #expect(echo.method == "POST")
            #expect(echo.path == "/echo/items")
            #expect(echo.queryItems["q"] == ["a b&c"])
            #expect(echo.body == #"{"text":"héllo & bye"}"#)
            #expect(echo.header("content-type")?.hasPrefix("application/json") == true)
            #expect(echo.header("x-client") == "courier")
            #expect(echo.header("authorization") == "Bearer t0ken")
        }
    }

    @Test(
        "A status outside the accepted range throws unacceptableStatus with the decoded API error",
        arguments: TransportKind.allCases
    )
    func apiError(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let request = Request<EmptyResponse>.get("/protected-403").decodingErrors(as: ErrorResponse.self)
            let error = try await #require(throws: CourierError.self) { try await client.send(request) }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 403)
            #expect(error.apiError(as: ErrorResponse.self) == ErrorResponse(code: 999, reason: "Invalid Token."))
        }
    }

    @Test("validatingStatus rejects a raw 503 and keeps the status and headers", arguments: TransportKind.allCases)
    func validatingStatus(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.validatingStatus()])
            let url = e2e.server.url("/status/503", query: ["header": "X-Reason: maintenance"])
            let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 503)
            #expect(error.middleware == "validatingStatus")
            #expect(error.responseHeaders.first { $0.key.lowercased() == "x-reason" }?.value == "maintenance")
        }
    }

    @Test("A body that is not the declared type throws decodingFailed", arguments: TransportKind.allCases)
    func decodingFailed(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let error = try await #require(throws: CourierError.self) {
                try await client.send(Request<User>.get("/status/200", query: ["body": "not json"]))
            }
            #expect(error.code == .decodingFailed)
            #expect(error.statusCode == 200)
        }
    }

    @Test("A header value with CR/LF is refused before the server sees anything", arguments: TransportKind.allCases)
    func invalidHeaderNeverSent(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let request = Request<EchoResponse>.get("/echo", query: ["countKey": .init(e2e.key)])
                .header("X-Evil", "a\r\nX-Injected: 1")
            let error = try await #require(throws: CourierError.self) { try await client.send(request) }
            #expect(error.code == .invalidRequest)
            // A request that does arrive afterwards is counted; the refused one never was.
            let _: EchoResponse = try await client.send(.get("/echo", query: ["countKey": .init(e2e.key)]))
            #expect(try await e2e.inspector.counters(e2e.key).hits == 1)
        }
    }

    @Test("Logging records each call without the credential", arguments: TransportKind.allCases)
    func loggingRedacts(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let records = Locked<[LogRecord]>([])
            let sink = LogSink { record in records.withLock { $0.append(record) } }
            let client = e2e.client([
                .logging(to: sink, includesHeaders: true),
                .authenticating(token: "super-secret-token"),
            ])
            let _: EchoResponse = try await client.send(.get("/echo"))
            _ = try? await client.send(Request<EmptyResponse>.get("/status/500"))
            let logged = records.value
            #expect(logged.map(\.statusCode) == [200, 500])
            #expect(logged.allSatisfy { !$0.description.contains("super-secret-token") })
        }
    }
}
