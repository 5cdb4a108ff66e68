import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Starting and stopping servers", .timeLimit(.minutes(3)))
struct LifecycleTests {
    @Test("A server listens on 127.0.0.1 at an ephemeral port")
    func binding() async throws {
        try await TestServers.withServer { server in
            #expect(server.port > 0)
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
            #expect(server.url("/json").absoluteString == "http://127.0.0.1:\(server.port)/json")
            let (_, response) = try await HTTP.send(server.url("/json"))
            #expect(response.statusCode == 200)
        }
    }

    @Test("url(_:query:) escapes values so a whole URL travels as one")
    func urlEscaping() async throws {
        try await TestServers.withServer { server in
            let inner = "http://127.0.0.1:1/echo?a=1&b=2 3"
            let url = server.url("/echo?x=y", query: ["to": inner, "plus": "+"])
            #expect(url.query == "x=y&to=http%3A%2F%2F127.0.0.1%3A1%2Fecho%3Fa%3D1%26b%3D2%203&plus=%2B")
            let echo = try await HTTP.json(EchoResponse.self, url)
            #expect(echo.queryItems == ["x": ["y"], "to": [inner], "plus": ["+"]])
        }
    }

    @Test("withTwoOrigins starts two servers on two ports, each the other's peer")
    func twoOrigins() async throws {
        try await TestServers.withTwoOrigins { a, b in
            #expect(a.name == "a")
            #expect(b.name == "b")
            #expect(a.port != b.port)
            #expect(await a.peerURL == b.baseURL)
            #expect(await b.peerURL == a.baseURL)
            let fromA = try await HTTP.json(EchoResponse.self, a.url("/echo"))
            let fromB = try await HTTP.json(EchoResponse.self, b.url("/echo"))
            #expect(fromA.server == "a")
            #expect(fromB.server == "b")
        }
    }

    @Test("State belongs to one server: counters on A are not seen on B")
    func separateState() async throws {
        try await TestServers.withTwoOrigins { a, b in
            _ = try await HTTP.send(a.url("/hit/shared"))
            #expect(try await HTTP.json(CounterSnapshot.self, a.url("/count/shared")).hits == 1)
            #expect(try await HTTP.json(CounterSnapshot.self, b.url("/count/shared")).hits == 0)
        }
    }

    @Test("After shutdown the port refuses connections; a second shutdown is harmless")
    func shutdown() async throws {
        let server = try await TestServers.start()
        _ = try await HTTP.send(server.url("/json"))
        await server.shutdown()
        await server.shutdown()
        await #expect(throws: URLError.self) {
            _ = try await HTTP.send(server.url("/json"))
        }
    }

    @Test("withServer shuts the server down when the body throws")
    func shutdownOnThrow() async throws {
        struct Expected: Error {}
        let captured = Captured()
        await #expect(throws: Expected.self) {
            try await TestServers.withServer { server in
                await captured.set(server.url("/json"))
                throw Expected()
            }
        }
        let url = try #require(await captured.url)
        await #expect(throws: URLError.self) {
            _ = try await HTTP.send(url)
        }
    }

    private actor Captured {
        var url: URL?
        func set(_ url: URL) { self.url = url }
    }
}
