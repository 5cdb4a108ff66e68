import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Response decoding")
struct ResponseDecodingTests {
    private func client(_ reply: MockResponse, decoder: JSONDecoder = JSONDecoder()) -> Client {
        Client(baseURL: exampleBaseURL, transport: MockTransport(reply), decoder: decoder)
    }

    private struct Profile: Decodable, Equatable {
        var displayName: String
        var createdAt: Date
    }

    private static var snakeCaseDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private static let profileJSON = #"{"display_name":"Ada","created_at":"2024-05-01T12:00:00Z"}"#
    private static let profile = Profile(displayName: "Ada", createdAt: Date(timeIntervalSince1970: 1_714_564_800))

    @Test("a model decodes with the client's decoder")
    func clientDecoder() async throws {
        let client = client(.json(Self.profileJSON), decoder: Self.snakeCaseDecoder)
        let profile: Profile = try await client.send(.get("/me"))
        #expect(profile == Self.profile)
    }

    @Test("a new decoder in the configuration decodes later responses")
    func decoderChange() async throws {
        let client = client(.json(Self.profileJSON))
        await #expect(throws: CourierError.self) { let _: Profile = try await client.send(.get("/me")) }
        await client.update { $0.decoder = Self.snakeCaseDecoder }
        let profile: Profile = try await client.send(.get("/me"))
        #expect(profile == Self.profile)
    }

    @Test("Data is the raw body, even when it is not text")
    func data() async throws {
        let bytes = Data([0x00, 0xFF, 0xFE, 0x7B])
        let data: Data = try await client(MockResponse(body: bytes)).send(.get("/blob"))
        #expect(data == bytes)
    }

    @Test("String is the body as UTF-8 text; bytes that are not UTF-8 are decodingFailed")
    func string() async throws {
        let text: String = try await client(.status(200, body: "héllo, wörld")).send(.get("/t"))
        #expect(text == "héllo, wörld")
        let error = await #expect(throws: CourierError.self) {
            let _: String = try await client(MockResponse(body: Data([0xC3, 0x28]))).send(.get("/t"))
        }
        #expect(error?.code == .decodingFailed)
    }

    @Test("EmptyResponse ignores whatever body there is")
    func emptyResponse() async throws {
        await #expect(throws: Never.self) {
            let _: EmptyResponse = try await client(.noContent).send(.delete("/users/1"))
        }
        // The same body fails as a model, so it is EmptyResponse that ignores it.
        let notJSON = MockResponse.status(200, body: "not json")
        await #expect(throws: Never.self) { let _: EmptyResponse = try await client(notJSON).send(.post("/x")) }
        await #expect(throws: CourierError.self) { let _: User = try await client(notJSON).send(.post("/x")) }
    }

    @Test(
        "an Optional is nil for 204, 205 and an empty body",
        arguments: [MockResponse.noContent, .status(205), .status(200), .status(404)]
    )
    func optionalNil(reply: MockResponse) async throws {
        let request = Request<User?>.get("/users/1").accepting(200..<500)
        let user = try await client(reply).send(request)
        #expect(user == nil)
    }

    @Test("an Optional is nil for a HEAD request, whatever body the transport hands back")
    func optionalNilOnHead() async throws {
        let user: User? = try await client(.json(User(id: 1, name: "Ada"))).send(.head("/users/1"))
        #expect(user == nil)
    }

    @Test("an Optional holds the value when there is a body")
    func optionalValue() async throws {
        let user: User? = try await client(.json(User(id: 1, name: "Ada"))).send(.get("/users/1"))
        #expect(user == User(id: 1, name: "Ada"))
    }

    @Test("an empty body into a model is decodingFailed and says the body was empty")
    func emptyBodyIntoModel() async throws {
        let error = await #expect(throws: CourierError.self) {
            let _: User = try await client(.ok).send(.get("/users/1"))
        }
        #expect(error?.code == .decodingFailed)
        #expect(error?.message.contains("empty") == true)
        #expect(error?.statusCode == 200)
    }

    @Test("malformed JSON is decodingFailed with the coding path and the decoding error underneath")
    func malformed() async throws {
        struct Envelope: Decodable { var user: User }
        let wrongType = await #expect(throws: CourierError.self) {
            let _: Envelope = try await client(.json(#"{"user":{"id":"seven","name":"Ada"}}"#)).send(.get("/u"))
        }
        #expect(wrongType?.code == .decodingFailed)
        #expect(wrongType?.message.contains("user.id") == true)
        #expect(wrongType?.underlying is DecodingError)
        #expect(wrongType?.bodyPreview?.contains("seven") == true)

        let missing = await #expect(throws: CourierError.self) {
            let _: User = try await client(.json(#"{"id":7}"#)).send(.get("/u"))
        }
        #expect(missing?.message.contains("\"name\"") == true)

        let notJSON = await #expect(throws: CourierError.self) {
            let _: User = try await client(.status(200, body: "<html>")).send(.get("/u"))
        }
        #expect(notJSON?.code == .decodingFailed)
    }

    @Test("response(for:) returns the HTTP response with the value")
    func responseForRequest() async throws {
        let reply = MockResponse.json(User(id: 3, name: "Lin"), status: 201, headers: ["Location": "/users/3"])
        let (user, response) = try await client(reply).response(for: Request<User>.post("/users"))
        #expect(user == User(id: 3, name: "Lin"))
        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "Location") == "/users/3")
    }

    @Test("a custom decoding closure gets the body, the response and the sent request")
    func customDecode() async throws {
        let request = Request<String>(method: .get, target: .path("/etag")) { _, response, context in
            "\(context.request?.url?.path ?? "?") \(response.value(forHTTPHeaderField: "ETag") ?? "none")"
        }
        let value = try await client(.status(200, headers: ["ETag": "\"v1\""])).send(request)
        #expect(value == "/etag \"v1\"")
    }

    @Test("a custom decoding closure's own error is wrapped as decodingFailed")
    func customDecodeFailure() async throws {
        struct Nope: Error {}
        let request = Request<Int>(method: .get, target: .path("/n")) { _, _, _ in throw Nope() }
        let error = await #expect(throws: CourierError.self) { try await client(.ok).send(request) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.underlying is Nope)
    }
}

@Suite("Typed API error bodies")
struct APIErrorBodyTests {
    private static let forbidden = MockResponse.json(
        #"{"error":true,"code":999,"reason":"Invalid Token."}"#,
        status: 403
    )
    private static let expected = APIError(error: true, code: 999, reason: "Invalid Token.")

    @Test("an error body declared on the request comes back typed on a 403")
    func perRequest() async throws {
        let client = Client(baseURL: exampleBaseURL, transport: MockTransport(Self.forbidden))
        let error = await #expect(throws: CourierError.self) {
            let _: User = try await client.send(Request<User>.get("/me").decodingErrors(as: APIError.self))
        }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.statusCode == 403)
        #expect(error?.apiError(as: APIError.self) == Self.expected)
    }

    @Test("an error body declared on the client comes back typed on a 403")
    func perClient() async throws {
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(Self.forbidden),
            errorBody: ErrorBodyDecoder(APIError.self)
        )
        let error = await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/me")) }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.apiError(as: APIError.self) == Self.expected)
    }

    @Test("the client's decoder decodes declared error bodies")
    func usesClientDecoder() async throws {
        struct SnakeError: Decodable, Sendable, Equatable { var errorCode: Int }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(.json(#"{"error_code":42}"#, status: 400)),
            decoder: decoder,
            errorBody: ErrorBodyDecoder(SnakeError.self)
        )
        let error = await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/x")) }
        #expect(error?.apiError(as: SnakeError.self) == SnakeError(errorCode: 42))
    }

    @Test("a request's error body type wins over the client's")
    func requestWins() async throws {
        struct Other: Decodable, Sendable { var unrelated: String }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(Self.forbidden),
            errorBody: ErrorBodyDecoder(Other.self)
        )
        await client.update { $0.errorBody = ErrorBodyDecoder(Other.self) }
        let error = await #expect(throws: CourierError.self) {
            let _: User = try await client.send(Request<User>.get("/me").decodingErrors(as: APIError.self))
        }
        #expect(error?.apiError(as: APIError.self) == Self.expected)
        #expect(error?.apiError(as: Other.self) == nil)
    }

    @Test("without a declaration apiError(as:) still decodes the stored body, and nil for the wrong type")
    func undeclared() async throws {
        let client = Client(baseURL: exampleBaseURL, transport: MockTransport(Self.forbidden))
        let error = await #expect(throws: CourierError.self) { let _: User = try await client.send(.get("/me")) }
        #expect(error?.apiError(as: APIError.self) == Self.expected)
        #expect(error?.apiError(as: User.self) == nil)
        #expect(error?.bodyPreview?.contains("Invalid Token.") == true)
    }

    @Test("accepting(_:) widens the statuses that decode as the response")
    func accepting() async throws {
        let client = Client(baseURL: exampleBaseURL, transport: MockTransport(Self.forbidden))
        let body = try await client.send(Request<APIError>.get("/me").accepting(200..<500))
        #expect(body == Self.expected)
    }
}
