import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bad input gets a clear `CourierError` and nothing reaches the transport.
@Suite("Bad input is refused before the transport")
struct RequestValidationTests {
    /// Sends `request` and returns the error, checking that the transport saw nothing.
    private func refusal<R>(
        _ request: Request<R>,
        baseURL: URL? = exampleBaseURL,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> CourierError? {
        let transport = MockTransport.ok
        let client = Client(baseURL: baseURL, transport: transport)
        let error = await #expect(throws: CourierError.self, sourceLocation: sourceLocation) {
            _ = try await client.send(request)
        }
        #expect(transport.callCount == 0, "the transport must see nothing", sourceLocation: sourceLocation)
        return error
    }

    @Test(
        "a path or URL that cannot form a valid URL is an invalid request",
        arguments: [
            "/a\u{01}b", "/line\nbreak", "/carriage\rreturn", "/nul\u{00}", "/del\u{7F}", "https://bad host/",
            "https://exa mple.test/x", "http://[::1/x", "https:///no-host",
        ]
    )
    func invalidURL(path: String) async throws {
        let error = await refusal(Request<EmptyResponse>.get(path))
        #expect(error?.code == .invalidRequest)
    }

    @Test("a relative path without a base URL is an invalid request that says so")
    func relativeWithoutBase() async throws {
        let error = await refusal(Request<EmptyResponse>.get("/users/42"), baseURL: nil)
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("base URL") == true)
    }

    @Test("a relative URL value is an invalid request")
    func relativeURLValue() async throws {
        let error = await refusal(Request<EmptyResponse>.get(URL(string: "users/42")!), baseURL: nil)
        #expect(error?.code == .invalidRequest)
    }

    @Test(
        "a header value with CR, LF or NUL is an invalid request",
        arguments: ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{00}b"]
    )
    func badHeaderValue(value: String) async throws {
        let error = await refusal(Request<EmptyResponse>.get("/x", headers: ["X-Note": value]))
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("X-Note") == true)
    }

    @Test(
        "a header name that is not an HTTP token is an invalid request",
        arguments: ["", "Bad Name", "X:Colon", "X-Bad\r\nInjected", "Ünïcode", "(paren)"]
    )
    func badHeaderName(name: String) async throws {
        let error = await refusal(
            Request<EmptyResponse>.get("/x", headers: HTTPHeaders([.init(name: name, value: "v")]))
        )
        #expect(error?.code == .invalidRequest)
    }

    @Test(
        "an invalid header name is shown as typed, with the offending character named",
        arguments: [
            ("Bad Header", #"the header name "Bad Header" is not a valid HTTP token (it contains a space)"#),
            ("X:Colon", #"the header name "X:Colon" is not a valid HTTP token (it contains ":")"#),
            ("(paren)", #"the header name "(paren)" is not a valid HTTP token (it contains "(")"#),
            (
                "X-Bad\r\nInjected",
                #"the header name "X-Bad\r\nInjected" is not a valid HTTP token (it contains a carriage return (\r))"#
            ),
            ("X\tTab", #"the header name "X\tTab" is not a valid HTTP token (it contains a tab (\t))"#),
            ("X\u{0}Nul", #"the header name "X\u{0}Nul" is not a valid HTTP token (it contains a NUL (\u{0}))"#),
            (
                "Ünïcode",
                #"the header name "Ünïcode" is not a valid HTTP token (it contains "Ü" (U+00DC), which is not ASCII)"#
            ),
            ("", "the header name is empty"),
        ]
    )
    func badHeaderNameMessage(name: String, message: String) async throws {
        let error = try #require(
            await refusal(Request<EmptyResponse>.get("/x", headers: HTTPHeaders([.init(name: name, value: "v")])))
        )
        #expect(error.message == message)
        #expect(!error.description.contains("\r") && !error.description.contains("\n"))
    }

    @Test(
        "a header name's line breaks of any kind are escaped in the message",
        arguments: ["\u{85}", "\u{2028}", "\u{2029}"]
    )
    func unicodeLineBreakInName(separator: String) async throws {
        let error = try #require(
            await refusal(
                Request<EmptyResponse>.get("/x", headers: HTTPHeaders([.init(name: "A\(separator)B", value: "v")]))
            )
        )
        #expect(!error.message.contains(separator))
        #expect(error.message.contains(#""A\u{"#))
    }

    @Test(
        "a method that is not an HTTP token is an invalid request, and the error does not repeat it",
        arguments: ["GET /admin HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "GET\n", "GE T", "DELETE\u{0}", "GET;"]
    )
    func badMethod(method: String) async throws {
        let request = Request<EmptyResponse>(method: HTTPMethod(rawValue: method), target: .path("/x"))
        let error = try #require(await refusal(request))
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("method"))
        for text in [error.description, error.debugDescription, error.method ?? ""] {
            #expect(!text.contains(HTTPMethod(rawValue: method).rawValue))
            #expect(!text.contains("\r") && !text.contains("\n"))
        }
    }

    @Test("a method a middleware sets on a raw URLRequest is checked before the transport")
    func middlewareSetsBadMethod() async throws {
        let transport = MockTransport.ok
        let smuggling = Middleware(name: "smuggling") { request, next in
            var request = request
            request.httpMethod = "GET /admin HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET"
            return try await next(request)
        }
        let client = Client(transport: transport, middleware: [smuggling])
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "https://api.example.test/x")!))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.description.contains("X-Injected") == false)
        #expect(transport.callCount == 0)
    }

    @Test("a tab and non-ASCII text are fine in header values")
    func allowedHeaderValues() async throws {
        let request = try #require(
            try await sent(Request<EmptyResponse>.get("/x", headers: ["X-Tab": "a\tb", "X-Text": "grüße"]))
        )
        #expect(request.value(forHTTPHeaderField: "X-Tab") == "a\tb")
        #expect(request.value(forHTTPHeaderField: "X-Text") == "grüße")
    }

    @Test("a header a middleware adds to a raw URLRequest is checked before the transport")
    func middlewareAddsBadHeader() async throws {
        let badName = Middleware(name: "bad-name") { request, next in
            var request = request
            request.setValue("v", forHTTPHeaderField: "X-Bad\r\nInjected")
            return try await next(request)
        }
        let badValue = Middleware(name: "bad-value") { request, next in
            var request = request
            // `allHTTPHeaderFields` keeps what it is given, CR and LF included.
            request.allHTTPHeaderFields = ["X-Note": "a\r\nX-Injected: 1"]
            return try await next(request)
        }
        for middleware in [badName, badValue] {
            let transport = MockTransport.ok
            let client = Client(transport: transport, middleware: [middleware])
            let error = await #expect(throws: CourierError.self) {
                try await client.send(URLRequest(url: URL(string: "https://api.example.test/x")!))
            }
            #expect(error?.code == .invalidRequest)
            // The request that reached the end of the chain was invalid: the check there, not the
            // innermost middleware, is where the error comes from.
            #expect(error?.middleware == nil)
            #expect(transport.callCount == 0)
        }
    }

    @Test("a header value with CR or LF set through setValue never reaches the transport")
    func setValueWithLineBreak() async throws {
        let transport = MockTransport.ok
        let client = Client(
            transport: transport,
            middleware: [
                Middleware { request, next in
                    var request = request
                    request.setValue("a\r\nX-Injected: 1", forHTTPHeaderField: "X-Note")
                    return try await next(request)
                }
            ]
        )
        do {
            _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/x")!))
            // FoundationNetworking drops such a value inside `setValue`; then nothing of it may arrive.
            let received = try #require(transport.onlyRequest)
            #expect(received.value(forHTTPHeaderField: "X-Note") == nil)
            #expect(received.value(forHTTPHeaderField: "X-Injected") == nil)
        } catch let error as CourierError {
            // Where `setValue` keeps the value, the check before the transport refuses it.
            #expect(error.code == .invalidRequest)
            #expect(transport.callCount == 0)
        }
    }

    @Test("a raw URLRequest without an absolute URL is an invalid request")
    func rawRequestWithoutHost() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport)
        let error = await #expect(throws: CourierError.self) {
            try await client.send(URLRequest(url: URL(string: "relative/path")!))
        }
        #expect(error?.code == .invalidRequest)
        #expect(transport.callCount == 0)
    }

    private struct Unencodable: Encodable, Sendable {
        struct Refused: Error {}
        func encode(to encoder: any Encoder) throws { throw Refused() }
    }

    @Test("an Encodable that throws is encodingFailed, with its error underneath")
    func throwingEncodable() async throws {
        let error = await refusal(Request<EmptyResponse>.post("/x", json: Unencodable()))
        #expect(error?.code == .encodingFailed)
        #expect(error?.underlying is Unencodable.Refused)
        #expect(error?.method == "POST")
    }

    @Test("a NaN with the default float strategy is encodingFailed")
    func notANumber() async throws {
        let error = await refusal(Request<EmptyResponse>.put("/x", json: ["ratio": Double.nan]))
        #expect(error?.code == .encodingFailed)
        #expect(error?.underlying is EncodingError)
    }
    @Test(
        "a body's Content-Type with CR, LF or NUL is an invalid request, from send and from urlRequest alike",
        arguments: ["text/plain\r\nX-Injected: 1", "text/plain\nX-Injected: 1", "text/plain\u{0}"]
    )
    func contentTypeInjection(_ contentType: String) async throws {
        let request = Request<EmptyResponse>.post("/x", body: .data(Data("x".utf8), contentType: contentType))
        let error = await refusal(request)
        #expect(error?.code == .invalidRequest)
        #expect(throws: CourierError.self) { try request.urlRequest(baseURL: exampleBaseURL) }
    }
}
