import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Redirect endpoints", .timeLimit(.minutes(3)))
struct RedirectTests {
    @Test("/redirect/:code sends that status with a relative Location to a path", arguments: [301, 302, 303, 307, 308])
    func sameOrigin(code: Int) async throws {
        try await TestServers.withServer { server in
            let (_, response) = try await HTTP.send(server.url("/redirect/\(code)", query: ["to": "/echo?x=1"]))
            #expect(response.statusCode == code)
            #expect(response.value(forHTTPHeaderField: "Location") == "/echo?x=1")

            let echo = try await HTTP.json(
                EchoResponse.self,
                server.url("/redirect/\(code)", query: ["to": "/echo?x=1"]),
                followRedirects: true
            )
            #expect(echo.path == "/echo")
            #expect(echo.query == "x=1")
        }
    }

    @Test("/redirect/:code can send the client to the other origin", arguments: [302, 307])
    func crossOrigin(code: Int) async throws {
        try await TestServers.withTwoOrigins { a, b in
            #expect(a.port != b.port)
            let target = b.url("/echo").absoluteString
            let (_, response) = try await HTTP.send(a.url("/redirect/\(code)", query: ["to": target]))
            #expect(response.statusCode == code)
            #expect(response.value(forHTTPHeaderField: "Location") == target)

            let echo = try await HTTP.json(
                EchoResponse.self,
                a.url("/redirect/\(code)", query: ["to": target]),
                followRedirects: true
            )
            #expect(echo.server == "b")
            #expect(echo.origin == b.baseURL.absoluteString)

            // ?peer=1 turns a path into the peer's URL.
            let (_, viaPeer) = try await HTTP.send(a.url("/redirect/\(code)?peer=1", query: ["to": "/json"]))
            #expect(viaPeer.value(forHTTPHeaderField: "Location") == b.url("/json").absoluteString)
        }
    }

    @Test(
        "/redirect/:code refuses targets off 127.0.0.1 and codes that are not redirects",
        arguments: [
            "/redirect/302?to=http%3A%2F%2Fexample.com%2F",
            "/redirect/302?to=http%3A%2F%2Flocalhost%3A1%2F",
            "/redirect/302?to=https%3A%2F%2F127.0.0.1%3A1%2F",
            "/redirect/302?to=%2F%2Fexample.com%2Fecho",
            "/redirect/302?to=http%3A%2F%2Fuser%40127.0.0.1%3A1%2F",
            "/redirect/302?to=echo",
            "/redirect/300",
            "/redirect/304",
            "/redirect/302?peer=1",
        ]
    )
    func refused(path: String) async throws {
        try await TestServers.withServer { server in
            let (_, response) = try await HTTP.send(server.url(path))
            #expect(response.statusCode == 400)
            #expect(response.value(forHTTPHeaderField: "Location") == nil)
        }
    }

    @Test("/redirect-chain/:n takes n hops, keeping the query, then answers like /echo")
    func chain() async throws {
        try await TestServers.withServer { server in
            let (_, first) = try await HTTP.send(server.url("/redirect-chain/3?code=307&tag=t"))
            #expect(first.statusCode == 307)
            #expect(first.value(forHTTPHeaderField: "Location") == "/redirect-chain/2?code=307&tag=t")
            let (_, last) = try await HTTP.send(server.url("/redirect-chain/1?tag=t"))
            #expect(last.statusCode == 302)
            #expect(last.value(forHTTPHeaderField: "Location") == "/echo?tag=t")

            let key = UUID().uuidString
            let echo = try await HTTP.json(
                EchoResponse.self,
                server.url("/redirect-chain/4", query: ["countKey": key]),
                followRedirects: true
            )
            #expect(echo.path == "/echo")
            #expect(echo.queryItems["countKey"] == [key])
            // 4 redirects and the final /echo.
            #expect(try await HTTP.json(CounterSnapshot.self, server.url("/count/\(key)")).hits == 5)

            let direct = try await HTTP.json(EchoResponse.self, server.url("/redirect-chain/0"))
            #expect(direct.path == "/redirect-chain/0")
        }
    }

    @Test("/redirect-chain/:n?alternate=1 bounces between the two origins")
    func alternatingChain() async throws {
        try await TestServers.withTwoOrigins { a, b in
            let (_, first) = try await HTTP.send(a.url("/redirect-chain/2?alternate=1"))
            #expect(
                first.value(forHTTPHeaderField: "Location") == b.url("/redirect-chain/1?alternate=1").absoluteString
            )
            let (_, second) = try await HTTP.send(b.url("/redirect-chain/1?alternate=1"))
            #expect(second.value(forHTTPHeaderField: "Location") == a.url("/echo?alternate=1").absoluteString)

            let echo = try await HTTP.json(
                EchoResponse.self,
                a.url("/redirect-chain/3?alternate=1"),
                followRedirects: true
            )
            #expect(echo.server == "b")
        }
    }

    @Test("/redirect-loop sends A to B and B back to A")
    func loop() async throws {
        try await TestServers.withTwoOrigins { a, b in
            let (_, fromA) = try await HTTP.send(a.url("/redirect-loop"))
            #expect(fromA.statusCode == 302)
            #expect(fromA.value(forHTTPHeaderField: "Location") == b.url("/redirect-loop").absoluteString)
            let (_, fromB) = try await HTTP.send(b.url("/redirect-loop"))
            #expect(fromB.value(forHTTPHeaderField: "Location") == a.url("/redirect-loop").absoluteString)
        }
    }

    @Test("A client that follows /redirect-loop bounces between both origins until it gives up")
    func loopFollowed() async throws {
        try await TestServers.withTwoOrigins { a, b in
            let key = UUID().uuidString
            let error = await #expect(throws: URLError.self) {
                _ = try await HTTP.send(a.url("/redirect-loop", query: ["countKey": key]), followRedirects: true)
            }
            #expect(error?.code == .httpTooManyRedirects)
            let onA = try await HTTP.json(CounterSnapshot.self, a.url("/count/\(key)"))
            let onB = try await HTTP.json(CounterSnapshot.self, b.url("/count/\(key)"))
            #expect(onB.hits >= 2)
            #expect(onA.hits - onB.hits == 1 || onA.hits == onB.hits)
        }
    }

    @Test("/redirect-loop on a server without a peer redirects to itself")
    func loopWithoutPeer() async throws {
        try await TestServers.withServer { server in
            #expect(await server.peerURL == nil)
            let (_, response) = try await HTTP.send(server.url("/redirect-loop?n=1"))
            #expect(response.value(forHTTPHeaderField: "Location") == "/redirect-loop?n=1")
        }
    }
}
