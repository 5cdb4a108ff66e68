#if OpenAPI
import CourierTesting
import Foundation
import HTTPTypes
@_spi(Generated) import OpenAPIRuntime
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("OpenAPIClientTransport (trait OpenAPI)", .timeLimit(.minutes(1)))
struct OpenAPIClientTransportTests {
    private static let root = URL(string: "https://api.example.test/base")!

    /// Sends `request` as a generated client would: through swift-openapi-runtime's `UniversalClient`, which
    /// wraps what the transport throws in `ClientError`.
    private static func send(
        _ request: HTTPRequest,
        body: HTTPBody? = nil,
        serverURL: URL,
        transport: OpenAPIClientTransport
    ) async throws -> (HTTPResponse, Data) {
        let client = UniversalClient(serverURL: serverURL, transport: transport)
        return try await client.send(
            input: "input",
            forOperation: "operation",
            serializer: { _ in (request, body) },
            deserializer: { response, body in
                guard let body else { return (response, Data()) }
                return (response, try await Data(collecting: body, upTo: 1 << 20))
            }
        )
    }

    @Test(
        "an absolute server URL is used as it is; a relative one is appended to the Courier client's baseURL",
        arguments: [
            ("https://other.example.test/v2", "https://other.example.test/v2/items/7?full=true"),
            ("https://other.example.test/v2/", "https://other.example.test/v2/items/7?full=true"),
            ("/v1", "https://api.example.test/base/v1/items/7?full=true"),
            ("v1/", "https://api.example.test/base/v1/items/7?full=true"),
            ("/", "https://api.example.test/base/items/7?full=true"),
        ]
    )
    func serverURL(server: String, expected: String) async throws {
        let mock = MockTransport.ok
        let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items/7?full=true")
        _ = try await Self.send(request, serverURL: URL(string: server)!, transport: transport)
        #expect(mock.lastRequest?.url?.absoluteString == expected)
    }

    @Test(
        "a server or base URL with a query or fragment, or a protocol-relative server URL, is refused, not joined as text",
        arguments: [
            ("https://other.example.test/v2?version=2", Self.root), ("https://other.example.test/v2#top", Self.root),
            ("/v1", URL(string: "https://api.example.test/base?api_key=k")!),
            ("/v1", URL(string: "https://api.example.test/base#top")!), ("//other.example.test/v1", Self.root),
        ]
    )
    func serverURLWithQuery(server: String, base: URL) async throws {
        let mock = MockTransport.ok
        let transport = OpenAPIClientTransport(client: Client(baseURL: base, transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items/7")
        let error = try await #require(throws: ClientError.self) {
            try await Self.send(request, serverURL: URL(string: server)!, transport: transport)
        }
        #expect((error.underlyingError as? CourierError)?.code == .invalidRequest)
        #expect(mock.callCount == 0)
    }

    @Test("a response body already read whole (not 2xx) does not keep its call in flight while the caller keeps it")
    func keptErrorBodyDoesNotPinTheCall() async throws {
        let mock = MockTransport(.status(500, body: "down for maintenance"))
        let courier = Client(baseURL: Self.root, transport: mock)
        let transport = OpenAPIClientTransport(client: courier)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items")
        // What generated code does with a response it did not expect: hands the body back unread.
        let (response, body) = try await transport.send(request, body: nil, baseURL: Self.root, operationID: "items")
        #expect(response.status.code == 500)
        #expect(courier.lifecycle.inFlight == 0)
        let bytes = try await Data(collecting: try #require(body), upTo: 1 << 10)
        #expect(String(decoding: bytes, as: UTF8.self) == "down for maintenance")
    }

    @Test("a 2xx body kept unread keeps its call in flight until it is dropped")
    func unreadBodyKeepsTheCall() async throws {
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/base/items").replies(.stream([.text("first "), .hold(until: release), .text("second")]))
        }
        let courier = Client(baseURL: Self.root, transport: mock)
        let transport = OpenAPIClientTransport(client: courier)
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items")
        do {
            let (_, body) = try await transport.send(request, body: nil, baseURL: Self.root, operationID: "items")
            #expect(courier.lifecycle.inFlight == 1)
            withExtendedLifetime(body) {}
        }
        try await waitUntil { courier.lifecycle.inFlight == 0 }
        release.open()
    }

    @Test("a response body streams: the generated client gets the head before the body has all arrived")
    func responseBodyStreams() async throws {
        let release = Gate()
        let mock = MockTransport {
            MockRoute.get("/base/events").replies(.stream([.text("first "), .hold(until: release), .text("second")]))
        }
        let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/events")
        let (response, body) = try await transport.send(request, body: nil, baseURL: Self.root, operationID: "events")
        #expect(response.status.code == 200)
        var iterator = try #require(body).makeAsyncIterator()
        #expect(try await iterator.next().map { String(decoding: $0, as: UTF8.self) } == "first ")
        release.open()
        #expect(try await iterator.next().map { String(decoding: $0, as: UTF8.self) } == "second")
        #expect(try await iterator.next() == nil)
    }

    @Test("a relative server URL with no baseURL on the Courier client fails with invalidRequest, inside ClientError")
    func relativeServerURLWithoutBase() async throws {
        let mock = MockTransport.ok
        let transport = OpenAPIClientTransport(client: Client(transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items")
        let error = try await #require(throws: ClientError.self) {
            try await Self.send(request, serverURL: URL(string: "/v1")!, transport: transport)
        }
        let courier = try #require(error.underlyingError as? CourierError)
        #expect(courier.code == .invalidRequest)
        #expect(courier.message.contains(#"server URL "/v1" is relative"#))
        #expect(mock.callCount == 0)
    }

    @Test("the method, headers (repeated ones joined in order) and body go through the client's middleware")
    func requestThroughMiddleware() async throws {
        let mock = MockTransport(.serviceUnavailable(), then: .json(#"{"id":7}"#, status: 201, headers: ["X-Id": "7"]))
        let client = Client(
            baseURL: Self.root,
            transport: mock,
            middleware: [
                .retry(.init(maximumAttempts: 2, backoff: .immediate, retriesNonIdempotentRequests: true, budget: nil)),
                .headers(["Authorization": "Bearer t1"]),
            ]
        )
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "application/json"))
        fields.append(HTTPField(name: .accept, value: "text/plain"))
        fields.append(HTTPField(name: .contentType, value: "application/json"))
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/items", headerFields: fields)
        let (response, body) = try await Self.send(
            request,
            body: HTTPBody(#"{"name":"a"}"#),
            serverURL: URL(string: "/")!,
            transport: OpenAPIClientTransport(client: client)
        )
        #expect(response.status == .created)
        #expect(response.headerFields[HTTPField.Name("X-Id")!] == "7")
        #expect(body == Data(#"{"id":7}"#.utf8))
        // Retried once after the 503, with the same body.
        #expect(mock.callCount == 2)
        for sent in mock.requests {
            #expect(sent.httpMethod == "POST")
            #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json, text/plain")
            #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer t1")
            #expect(sent.httpBody == Data(#"{"name":"a"}"#.utf8))
        }
    }

    @Test("a request body over maximumRequestBodySize fails with invalidRequest and nothing is sent")
    func bodyLimit() async throws {
        let mock = MockTransport.ok
        let transport = OpenAPIClientTransport(
            client: Client(baseURL: Self.root, transport: mock),
            maximumRequestBodySize: 8
        )
        #expect(OpenAPIClientTransport.defaultMaximumRequestBodySize == 10 * 1024 * 1024)
        let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/upload")
        // One body of known length, one streamed with an unknown length.
        let (stream, continuation) = AsyncStream.makeStream(of: ArraySlice<UInt8>.self)
        continuation.yield(ArraySlice("12345".utf8))
        continuation.yield(ArraySlice("6789".utf8))
        continuation.finish()
        for body in [HTTPBody("123456789"), HTTPBody(stream, length: .unknown)] {
            let error = try await #require(throws: ClientError.self) {
                try await Self.send(request, body: body, serverURL: URL(string: "/")!, transport: transport)
            }
            let courier = try #require(error.underlyingError as? CourierError)
            #expect(courier.code == .invalidRequest)
            #expect(courier.message.contains("maximumRequestBodySize (8 bytes)"))
        }
        #expect(mock.callCount == 0)
        // At the limit, it is sent.
        _ = try await Self.send(request, body: HTTPBody("12345678"), serverURL: URL(string: "/")!, transport: transport)
        #expect(mock.lastRequest?.httpBody == Data("12345678".utf8))
    }

    @Test("Courier's errors reach the generated client's caller as ClientError's underlyingError")
    func courierErrors() async throws {
        let client = Client(
            baseURL: Self.root,
            transport: MockTransport(.status(500)),
            middleware: [.validatingStatus()]
        )
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items")
        let error = try await #require(throws: ClientError.self) {
            try await Self.send(
                request,
                serverURL: URL(string: "/")!,
                transport: OpenAPIClientTransport(client: client)
            )
        }
        let courier = try #require(error.underlyingError as? CourierError)
        #expect(courier.code == .unacceptableStatus)
        #expect(courier.statusCode == 500)
        #expect(error.operationID == "operation")
    }

    @Test("a cancelled call reaches the caller as ClientError with a CancellationError underneath")
    func cancellation() async throws {
        let arrived = Arrivals()
        let mock = MockTransport.hanging(counting: arrived)
        let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/slow")
        let call = Task { try await Self.send(request, serverURL: URL(string: "/")!, transport: transport) }
        await arrived.wait(for: 1)
        call.cancel()
        let error = try await #require(throws: ClientError.self) { try await call.join() }
        #expect(error.underlyingError is CancellationError)
        #expect(mock.cancellationCount == 1)
    }

    /// `{"message":"compressed compressed … "}` (234 bytes) gzipped into 46.
    private static let gzipped = Data(
        base64Encoded: "H4sIAAAAAAACA6tWyk0tLk5MT1WyUkrOzy0oAvJSUxSGHVOpFgDsqI/p6gAAAA=="
    )!

    /// The real transports, each with a Courier client whose base URL is `server`'s.
    private static func transports(for server: SocketServer) -> [(String, any Transport)] {
        var transports: [(String, any Transport)] = [("URLSessionTransport", URLSessionTransport())]
        #if AsyncHTTPClient
        transports.append(("AsyncHTTPClientTransport", AsyncHTTPClientTransport()))
        #endif
        return transports
    }

    /// Sends `method /resource` through `transport` and returns the length the body announces and its bytes.
    private static func lengthAndBytes(
        _ method: HTTPRequest.Method,
        to server: SocketServer,
        through transport: any Transport
    ) async throws -> (HTTPBody.Length, Int) {
        let openAPI = OpenAPIClientTransport(client: Client(baseURL: server.url(), transport: transport))
        let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: "/resource")
        let (_, body) = try await openAPI.send(request, body: nil, baseURL: server.url(), operationID: "op")
        let received = try #require(body)
        return (received.length, try await Data(collecting: received, upTo: 1 << 20).count)
    }

    @Test("a body the transport decompressed does not announce its compressed length")
    func decompressedBodyLength() async throws {
        let server = try SocketServer { _ in
            .response(status: 200, headers: [.init(name: "Content-Encoding", value: "gzip")], body: Self.gzipped)
        }
        defer { server.shutdown() }
        for (name, transport) in Self.transports(for: server) {
            let result = await outcome { try await Self.lengthAndBytes(.get, to: server, through: transport) }
            #if AsyncHTTPClient
            try await (transport as? AsyncHTTPClientTransport)?.shutdown()
            #endif
            let (length, count) = try result.get()
            #expect(count == 234, "\(name)")
            // Unknown, or the bytes that were handed over; never the 46 of the Content-Length.
            #expect(length == .unknown || length == .known(Int64(count)), "\(name): \(length)")
        }
    }

    @Test("a response to HEAD announces no body, whatever its Content-Length says")
    func headResponseLength() async throws {
        let server = try SocketServer { _ in
            .raw(Data("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n".utf8))
        }
        defer { server.shutdown() }
        for (name, transport) in Self.transports(for: server) {
            let result = await outcome { try await Self.lengthAndBytes(.head, to: server, through: transport) }
            #if AsyncHTTPClient
            try await (transport as? AsyncHTTPClientTransport)?.shutdown()
            #endif
            let (length, count) = try result.get()
            #expect(length == .known(0), "\(name)")
            #expect(count == 0, "\(name)")
        }
    }

    @Test(
        "a response that has no body by definition announces a length of 0",
        arguments: [("HEAD", 200), ("GET", 204), ("GET", 304)]
    )
    func bodilessLength(method: String, status: Int) async throws {
        let mock = MockTransport(MockResponse(status: status, headers: ["Content-Length": "1000"]))
        let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
        let request = HTTPRequest(method: HTTPRequest.Method(method)!, scheme: nil, authority: nil, path: "/items")
        let (_, body) = try await transport.send(request, body: nil, baseURL: Self.root, operationID: "op")
        #expect(body?.length == .known(0))
    }

    @Test("a body still streaming with a Content-Encoding has an unknown length; one without, its Content-Length")
    func streamingLength() async throws {
        let release = Gate()
        for (headers, expected) in [
            (["Content-Encoding": "gzip", "Content-Length": "246"], HTTPBody.Length.unknown),
            (["Content-Length": "11"], .known(11)),
        ] {
            let mock = MockTransport {
                MockRoute.get("/base/events").replies(
                    .stream([.text("first "), .hold(until: release)], headers: headers)
                )
            }
            let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/events")
            let (_, body) = try await transport.send(request, body: nil, baseURL: Self.root, operationID: "events")
            #expect(body?.length == expected)
        }
        release.open()
    }

    @Test("a response header that is not valid HTTP is a nonHTTPResponse error, not dropped")
    func invalidResponseHeader() async throws {
        let mock = MockTransport(.status(200, headers: ["Bad Name": "1"]))
        let transport = OpenAPIClientTransport(client: Client(baseURL: Self.root, transport: mock))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items")
        let error = try await #require(throws: ClientError.self) {
            try await Self.send(request, serverURL: URL(string: "/")!, transport: transport)
        }
        #expect((error.underlyingError as? CourierError)?.code == .nonHTTPResponse)
    }
}
#endif
