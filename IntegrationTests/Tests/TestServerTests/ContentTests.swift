import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Content endpoints", .timeLimit(.minutes(3)))
struct ContentTests {
    @Test("GET /json answers a small JSON object")
    func json() async throws {
        try await TestServers.withServer { server in
            let user = try await HTTP.json(User.self, server.url("/json"))
            #expect(user == User(id: 42, name: "Ada"))
        }
    }

    @Test("GET /users/:id answers that user, and 404 for an id that is not a number")
    func users() async throws {
        try await TestServers.withServer { server in
            #expect(try await HTTP.json(User.self, server.url("/users/7")) == User(id: 7, name: "User 7"))
            #expect(try await HTTP.json(User.self, server.url("/users/42")) == User(id: 42, name: "Ada"))
            let (_, response) = try await HTTP.send(server.url("/users/abc"))
            #expect(response.statusCode == 404)
        }
    }

    @Test("/echo returns method, path, query, headers and body", arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func echo(method: String) async throws {
        try await TestServers.withServer(name: "echoer") { server in
            let body = Data(#"{"hello":"wörld"}"#.utf8)
            let echo = try await HTTP.json(
                EchoResponse.self,
                server.url("/echo", query: ["a": "1", "b": "x y&z"]),
                method: method,
                headers: [("Content-Type", "application/json"), ("X-Custom", "value")],
                body: body
            )
            #expect(echo.server == "echoer")
            #expect(echo.origin == server.baseURL.absoluteString)
            #expect(echo.method == method)
            #expect(echo.path == "/echo")
            #expect(echo.query == "a=1&b=x%20y%26z")
            #expect(echo.queryItems == ["a": ["1"], "b": ["x y&z"]])
            #expect(echo.header("content-type") == "application/json")
            #expect(echo.headers["x-custom"] == ["value"])
            #expect(echo.header("Host") == "127.0.0.1:\(server.port)")
            #expect(echo.body == #"{"hello":"wörld"}"#)
            #expect(echo.bodyBase64 == body.base64EncodedString())
            #expect(echo.bodyLength == body.count)
        }
    }

    @Test("/echo/** echoes any path below /echo, and a GET has an empty body")
    func echoSubpath() async throws {
        try await TestServers.withServer { server in
            let echo = try await HTTP.json(EchoResponse.self, server.url("/echo/a/b%20c"))
            #expect(echo.method == "GET")
            #expect(echo.path == "/echo/a/b%20c")
            #expect(echo.query == nil)
            #expect(echo.body == "")
            #expect(echo.bodyLength == 0)
        }
    }

    @Test("/echo keeps every value of a repeated header, in order (raw socket)")
    func echoRepeatedHeaders() async throws {
        try await TestServers.withServer { server in
            let headers = "X-Multi: one\r\nX-MULTI: two\r\nx-multi: three\r\n"
            let reply = try await RawHTTP.get("/echo", headers: headers, from: server)
            #expect(reply.status == 200)
            let echo = try JSONDecoder().decode(EchoResponse.self, from: Data(reply.body))
            #expect(echo.headers["x-multi"] == ["one", "two", "three"])
            #expect(echo.headers["connection"] == ["close"])
        }
    }

    @Test("/large/:bytes sends exactly that many bytes of the documented pattern", arguments: [0, 1, 65_537, 1 << 20])
    func large(count: Int) async throws {
        try await TestServers.withServer { server in
            let (data, response) = try await HTTP.send(server.url("/large/\(count)"))
            #expect(response.statusCode == 200)
            #expect(response.value(forHTTPHeaderField: "Content-Length") == String(count))
            #expect(data == TestServers.largeBody(count: count))
        }
    }

    @Test("/large/:bytes?chunked=1 streams without a Content-Length (raw socket)")
    func largeChunked() async throws {
        try await TestServers.withServer { server in
            let reply = try await RawHTTP.get("/large/200000?chunked=1", from: server)
            #expect(reply.status == 200)
            #expect(reply.header("Content-Length") == nil)
            #expect(reply.header("Transfer-Encoding") == "chunked")

            let (data, _) = try await HTTP.send(server.url("/large/200000?chunked=1"))
            #expect(data == TestServers.largeBody(count: 200_000))
        }
    }

    @Test("/large/:bytes refuses a size that is not a number or is too large")
    func largeRefused() async throws {
        try await TestServers.withServer { server in
            for path in ["/large/-1", "/large/lots", "/large/\(1 << 40)"] {
                let (_, response) = try await HTTP.send(server.url(path))
                #expect(response.statusCode == 400, "\(path)")
            }
        }
    }
}
