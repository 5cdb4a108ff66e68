// A quick tour of Courier: compose middleware in front of a transport, send a typed request, read a typed
// API error, and watch bad input get refused before anything is sent.
//
// It runs against a small fake API that lives in memory (no network): `swift run QuickTour`.

// snippet.hide
import Courier
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fake API in memory: `GET /users/42` needs the demo token; `/admin` is always forbidden.
final class FakeAPI: Transport {
    let received = Mutex(0)

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try RequestValidation.validate(request)  // every transport refuses what could not be sent safely
        received.withLock { $0 += 1 }
        let authorized = request.value(forHTTPHeaderField: "Authorization") == "Bearer demo-token"
        let forbidden = #"{"error":true,"code":999,"reason":"Invalid Token."}"#
        switch (request.httpMethod ?? "GET", request.url?.path ?? "") {
        case ("GET", "/v1/users/42") where authorized:
            return Self.reply(200, #"{"id":42,"name":"Ada Lovelace"}"#, for: request)
        case ("GET", "/v1/users/42"), ("GET", "/v1/admin"):
            return Self.reply(403, forbidden, for: request)
        default:
            return Self.reply(404, #"{"error":true,"code":404,"reason":"Not found."}"#, for: request)
        }
    }

    private static func reply(_ status: Int, _ body: String, for request: URLRequest) -> (Data, HTTPURLResponse) {
        let response = HTTPURLResponse(
            url: request.url!,
            statusCode: status,
            httpVersion: "HTTP/1.1",
            headerFields: ["Content-Type": "application/json"]
        )!
        return (Data(body.utf8), response)
    }
}

let api = FakeAPI()
// snippet.show

struct User: Decodable, Sendable {
    let id: Int
    let name: String
}

/// The API's error body: `{"error":true,"code":999,"reason":"Invalid Token."}`.
struct APIError: Decodable, Sendable {
    let error: Bool
    let code: Int
    let reason: String
}

// 1. Composition: the first middleware listed is the outermost; it sees the request first and the
//    response last. Built-in middleware and your own closures mix freely.
let client = Client(
    baseURL: URL(string: "https://api.example.com/v1")!,
    transport: api,
    middleware: [
        .logging(to: LogSink { record in print("  log: \(record.message)") }),
        .authenticating(token: "demo-token"),
        .jsonHeaders,
        .validatingStatus(),
    ],
    errorBody: ErrorBodyDecoder(APIError.self)
)
let userAgent = Middleware(name: "user-agent") { request, next in
    var request = request
    request.setValue("courier-quick-tour", forHTTPHeaderField: "User-Agent")
    return try await next(request)
}
await client.update { $0.middleware.append(userAgent) }  // the configuration can change while requests run

// 2. A typed request: the path joins the base URL, the JSON body decodes into `User`.
print("1. Typed decode")
let user: User = try await client.send(.get("/users/42"))
print("  user #\(user.id): \(user.name)")

// 3. A typed API error: a 403 whose body the client decodes as `APIError`.
print("2. Typed API error")
do {
    let _: User = try await client.send(.get("/admin"))
} catch let error as CourierError {
    if let apiError = error.apiError(as: APIError.self) {
        print("  \(error.code), status \(error.statusCode ?? 0), API error \(apiError.code): \(apiError.reason)")
    }
    // Descriptions are safe to log: the Authorization header, tokens and URL user-info are redacted.
    print("  \(error.description)")
}

// 4. Bad input never leaves the process: a header value with CR/LF, and a URL that cannot be formed.
print("3. Validation")
let sentBefore = api.received.withLock { $0 }
for request in [
    Request<User>.get("/users/42", headers: ["X-Note": "hello\r\nX-Injected: 1"]),
    Request<User>.get("https://bad host/users"),
] {
    do {
        _ = try await client.send(request)
    } catch let error as CourierError {
        print("  \(error.code): \(error.message)")
    }
}
print("  requests that reached the API: \(api.received.withLock { $0 } - sentBefore)")
