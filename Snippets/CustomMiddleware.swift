// Writing your own middleware.
//
// A middleware is a closure `(URLRequest, Next) async throws -> (Data, HTTPURLResponse)` with a name.
// This snippet writes four, each in a factory that builds its state once:
//
// - `requestID`: changes the request and calls `next` once;
// - `memoizing`: answers repeated GETs from memory, calling `next` zero times on a hit;
// - `retryingOnce(on:)`: calls `next` a second time when the first answer is a 503;
// - `readOnly`: calls `next` zero times and throws a `CourierError`, which then names it.
//
// They run against a small in-memory API (no network). Run it with `swift run CustomMiddleware`.

// snippet.hide
import Courier
import CourierTesting
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An in-memory API (the testing kit's routed mock): `/users/42` answers with a user, `/flaky` answers 503
/// the first time, anything else 404. It records every request it receives.
let api = MockTransport(unmatched: .status(404, body: "not found")) {
    MockRoute.get("/users/42").replies(.json(#"{"id":42,"name":"Ada"}"#))
    MockRoute.get("/flaky").replies(.status(503, body: "busy"), then: .json(#"{"ok":true}"#))
}
// snippet.show

extension Middleware {
    /// Stamps every request with `X-Request-ID: <prefix>-<n>`.
    static func requestID(prefix: String) -> Middleware {
        // Built once, when the middleware is made; every request shares it.
        let counter = Mutex(0)
        return Middleware(name: "requestID") { request, next in
            let number = counter.withLock { count in
                count += 1
                return count
            }
            var request = request
            request.setValue("\(prefix)-\(number)", forHTTPHeaderField: "X-Request-ID")
            return try await next(request)
        }
    }

    /// Answers repeated GETs with the first successful response (a toy: no expiry, no size limit; Courier's
    /// own `.caching()` follows HTTP's caching rules).
    static func memoizing() -> Middleware {
        let stored = Mutex<[URL: (Data, HTTPURLResponse)]>([:])
        return Middleware(name: "memoizing") { request, next in
            guard request.httpMethod ?? "GET" == "GET", let url = request.url else {
                return try await next(request)
            }
            if let hit = stored.withLock({ $0[url] }) {
                return hit  // `next` is not called: nothing below this middleware runs
            }
            let (data, response) = try await next(request)
            if response.statusCode == 200 {
                stored.withLock { $0[url] = (data, response) }
            }
            return (data, response)
        }
    }

    /// Sends the request once more when the first answer has the status `status`.
    static func retryingOnce(on status: Int) -> Middleware {
        Middleware(name: "retryingOnce") { request, next in
            let first = try await next(request)
            guard first.1.statusCode == status else { return first }
            try Task.checkCancellation()  // never retry a cancelled request
            return try await next(request)
        }
    }

    /// Refuses anything but GET and HEAD, before it is sent.
    static let readOnly = Middleware(name: "readOnly") { request, next in
        let method = request.httpMethod ?? "GET"
        guard method == "GET" || method == "HEAD" else {
            throw CourierError(.invalidRequest, message: "\(method) is not allowed on this client", request: request)
        }
        return try await next(request)
    }
}

// snippet.hide
func get(_ path: String, method: String = "GET") -> URLRequest {
    var request = URLRequest(url: URL(string: "https://api.example.test" + path)!)
    request.httpMethod = method
    return request
}

func report(_ step: String, _ text: String, _ api: MockTransport) {
    let padded = step.padding(toLength: 34, withPad: " ", startingAt: 0)
    print("\(padded) \(text)   [transport calls: \(api.callCount)]")
}
// snippet.show

// The first middleware listed is outermost. `validatingStatus` sits outside the retry, so the retry
// still sees the 503 as a response; `requestID` sits innermost, so a retried request gets a new ID and
// a cache hit gets none at all.
let client = Client(
    transport: api,
    middleware: [.readOnly, .validatingStatus(), .memoizing(), .retryingOnce(on: 503), .requestID(prefix: "req")]
)

let (user, _) = try await client.send(get("/users/42"))
report("GET /users/42", String(decoding: user, as: UTF8.self), api)

let (cached, _) = try await client.send(get("/users/42"))
report("GET /users/42 again (cache hit)", String(decoding: cached, as: UTF8.self), api)

let (flaky, flakyResponse) = try await client.send(get("/flaky"))
report("GET /flaky (503, then retried)", "\(flakyResponse.statusCode) \(String(decoding: flaky, as: UTF8.self))", api)

do {
    _ = try await client.send(get("/users/42", method: "DELETE"))
} catch let error as CourierError {
    report("DELETE /users/42", "\(error.code) from middleware \(error.middleware ?? "?")", api)
}

do {
    _ = try await client.send(get("/missing"))
} catch let error as CourierError {
    report("GET /missing", "\(error.code) \(error.statusCode ?? 0) from \(error.middleware ?? "?")", api)
}

let requestIDs = api.requests.map { $0.value(forHTTPHeaderField: "X-Request-ID") ?? "none" }
print("Request IDs the transport saw: \(requestIDs.joined(separator: ", "))")
