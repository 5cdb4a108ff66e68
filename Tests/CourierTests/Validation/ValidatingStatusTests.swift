import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("validatingStatus")
struct ValidatingStatusTests {
    private struct APIError: Decodable, Sendable, Equatable {
        var error: Bool
        var code: Int
        var reason: String
    }

    @Test("an acceptable status passes the response through unchanged", arguments: [200, 201, 204, 299])
    func acceptablePasses(status: Int) async throws {
        let transport = MockTransport(.status(status, body: "payload"))
        let client = makeClient(transport, [.validatingStatus()])
        let (data, response) = try await client.send(URLRequest(url: testURL))
        #expect(response.statusCode == status)
        #expect(String(decoding: data, as: UTF8.self) == "payload")
    }

    @Test("an unacceptable status throws unacceptableStatus", arguments: [100, 199, 300, 304, 404, 500, 503])
    func unacceptableThrows(status: Int) async throws {
        let client = makeClient(MockTransport(.status(status)), [.validatingStatus()])
        let error = try await #require(throws: CourierError.self) {
            try await client.send(URLRequest(url: testURL))
        }
        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == status)
    }

    @Test("the error carries the status, the headers, a body preview, the request and the middleware name")
    func errorCarriesDetails() async throws {
        let transport = MockTransport(
            .status(422, body: #"{"reason":"name is missing"}"#, headers: ["X-Request-ID": "r-1"])
        )
        let client = makeClient(transport, [.validatingStatus()])
        var request = URLRequest(url: testURL)
        request.httpMethod = "PUT"
        let error = try await #require(throws: CourierError.self) { try await client.send(request) }
        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == 422)
        #expect(error.responseHeaders["X-Request-ID"] == "r-1")
        #expect(error.bodyPreview == #"{"reason":"name is missing"}"#)
        #expect(error.middleware == "validatingStatus")
        #expect(error.method == "PUT")
        #expect(error.redactedURL == testURL.absoluteString)
        #expect(error.description.contains("422"))
        #expect(error.description.contains("200..<300"))
    }

    @Test("a custom range decides what passes")
    func customRange() async throws {
        let redirects = makeClient(MockTransport(.status(304)), [.validatingStatus(200..<400)])
        let (_, response) = try await redirects.send(URLRequest(url: testURL))
        #expect(response.statusCode == 304)

        let strict = makeClient(MockTransport(.status(400)), [.validatingStatus(200..<400)])
        let error = try await #require(throws: CourierError.self) { try await strict.send(URLRequest(url: testURL)) }
        #expect(error.statusCode == 400)
        #expect(error.message.contains("200..<400"))
    }

    @Test(
        "closed-range, set and closure rules accept and reject as declared",
        arguments: [
            (Middleware.validatingStatus(200...204), 204, true),
            (Middleware.validatingStatus(200...204), 205, false),
            (Middleware.validatingStatus([200, 304]), 304, true),
            (Middleware.validatingStatus([200, 304]), 301, false),
            (Middleware.validatingStatus { $0 != 202 }, 500, true),
            (Middleware.validatingStatus { $0 != 202 }, 202, false),
        ]
    )
    func otherRules(middleware: Middleware, status: Int, passes: Bool) async throws {
        let client = makeClient(MockTransport(.status(status)), [middleware])
        if passes {
            let (_, response) = try await client.send(URLRequest(url: testURL))
            #expect(response.statusCode == status)
        } else {
            let error = try await #require(throws: CourierError.self) {
                try await client.send(URLRequest(url: testURL))
            }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == status)
            #expect(error.middleware == "validatingStatus")
        }
    }

    @Test("the set rule lists the accepted statuses in its message")
    func setRuleMessage() async throws {
        let client = makeClient(MockTransport(.status(418)), [.validatingStatus([304, 200])])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.message.contains("one of 200, 304"))
    }

    @Test("with an error body decoder, a raw request's error carries the typed API error")
    func typedAPIError() async throws {
        let transport = MockTransport(.json(#"{"error":true,"code":999,"reason":"Invalid Token."}"#, status: 403))
        let client = makeClient(transport, [.validatingStatus(errorBody: ErrorBodyDecoder(APIError.self))])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.statusCode == 403)
        #expect(error.apiError(as: APIError.self) == APIError(error: true, code: 999, reason: "Invalid Token."))
    }

    @Test("the error body decoder, not a plain JSON fallback, produces the API error")
    func decoderIsUsed() async throws {
        struct Reason: Decodable, Sendable, Equatable { var text: String }
        // The body is not JSON, so only the given decoder can turn it into a `Reason`.
        let errorBody = ErrorBodyDecoder { data in Reason(text: String(decoding: data, as: UTF8.self)) }
        let client = makeClient(
            MockTransport(.status(503, body: "down for maintenance")),
            [.validatingStatus(errorBody: errorBody)]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.apiError(as: Reason.self) == Reason(text: "down for maintenance"))
    }

    @Test("the error body is decoded with the given JSON decoder")
    func customDecoder() async throws {
        struct SnakeError: Decodable, Sendable { var errorCode: Int }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let client = makeClient(
            MockTransport(.json(#"{"error_code":42}"#, status: 400)),
            [.validatingStatus(errorBody: ErrorBodyDecoder(SnakeError.self), decoder: decoder)]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.apiError(as: SnakeError.self)?.errorCode == 42)
    }

    @Test("a typed request's declared error body is decoded with the client's decoder when the middleware throws")
    func typedRequestErrorBody() async throws {
        struct SnakeError: Decodable, Sendable { var errorCode: Int }
        struct Item: Decodable, Sendable { var id: Int }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport(.json(#"{"error_code":7}"#, status: 404)),
            middleware: [.validatingStatus()],
            decoder: decoder
        )
        let error = try await #require(throws: CourierError.self) {
            let _: Item = try await client.send(Request<Item>.get("/items/1").decodingErrors(as: SnakeError.self))
        }
        #expect(error.middleware == "validatingStatus")
        // A plain JSONDecoder cannot read `error_code` into `errorCode`: this value came from the client's decoder.
        #expect(error.apiError(as: SnakeError.self)?.errorCode == 7)
    }

    @Test("an error body longer than the error keeps still decodes, in the middleware and in a typed request's check")
    func longErrorBody() async throws {
        let reason = String(repeating: "x", count: CourierError.maximumStoredBodySize)
        let body = #"{"error":true,"code":1,"reason":"\#(reason)"}"#
        let transport = MockTransport(.json(body, status: 400))

        let raw = makeClient(transport, [.validatingStatus(errorBody: ErrorBodyDecoder(APIError.self))])
        let fromMiddleware = try await #require(throws: CourierError.self) {
            try await raw.send(URLRequest(url: testURL))
        }
        let typed = Client(baseURL: testURL, transport: transport, errorBody: ErrorBodyDecoder(APIError.self))
        let fromRequest = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await typed.send(.get("/items"))
        }

        // The stored body is cut at the limit, so these values can only come from the whole body.
        #expect(fromMiddleware.responseBody?.count == CourierError.maximumStoredBodySize)
        // (Counts, not the values: a failure should not print 64 KiB of "x".)
        #expect(fromMiddleware.apiError(as: APIError.self)?.reason.count == reason.count)
        #expect(fromRequest.middleware == nil)
        #expect(fromRequest.apiError(as: APIError.self)?.reason.count == reason.count)
    }

    @Test("an empty error body leaves the API error empty")
    func emptyBody() async throws {
        let client = makeClient(
            MockTransport(.status(500)),
            [.validatingStatus(errorBody: ErrorBodyDecoder(APIError.self))]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.bodyPreview == nil)
        #expect(error.apiError(as: APIError.self) == nil)
    }

    @Test("middleware outside sees the error with the validating middleware's name")
    func outerMiddlewareSeesError() async throws {
        let seen = Locked<String?>(nil)
        let outer = Middleware(name: "outer") { request, next in
            do {
                return try await next(request)
            } catch let error as CourierError {
                seen.withLock { $0 = error.middleware }
                throw error
            }
        }
        let client = makeClient(MockTransport(.status(502)), [outer, .validatingStatus()])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(seen.value == "validatingStatus")
        #expect(error.middleware == "validatingStatus")
    }

    @Test("no secret from the request or the response appears in any description of the error")
    func noSecrets() async throws {
        let transport = MockTransport(
            MockResponse(status: 401, headers: secretLadenResponseHeaders, body: Data(secretLadenResponseBody.utf8))
        )
        let client = makeClient(transport, [.validatingStatus()])
        let error = try await #require(throws: CourierError.self) { try await client.send(secretLadenRequest()) }
        #expect(error.statusCode == 401)
        #expect(error.bodyPreview?.contains("note") == true)
        expectNoSecrets(error.description)
        expectNoSecrets(error.debugDescription)
        expectNoSecrets(error.localizedDescription)
        expectNoSecrets(String(reflecting: error))
        expectNoSecrets(error.bodyPreview ?? "")
        expectNoSecrets(error.responseHeaders.description)
    }
}
