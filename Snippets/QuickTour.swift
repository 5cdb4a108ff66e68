// A quick tour of what Courier is for, in six steps, each printing one line: token refresh under load, retry
// with backoff, a timeout, a fan-out and its counter, a typed error body, and bad input refused.
//
// Everything runs in memory against a small fake API (no network), in well under 2 seconds:
// `swift run QuickTour`. The backoff is real but tiny (10 ms, then 20 ms) so that the tour is quick.

// snippet.hide
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct User: Codable, Sendable {
    let id: Int
    let name: String
}

/// The API's error body: `{"code":999,"reason":"Invalid Token."}`.
struct APIError: Decodable, Sendable {
    let code: Int
    let reason: String
}

/// The fake API: it accepts only the fresh token; `/flaky` fails twice with 503 and then answers; `/hung` never
/// answers; `/admin` is forbidden, with an error body; every other path is a user, after 20 ms.
let flakyCalls = Locked(0)
let api = MockTransport { request in
    guard request.header("Authorization") == "Bearer fresh-token" else { return .unauthorized() }
    switch request.path {
    case "/flaky":
        let call = flakyCalls.withLock { calls in
            calls += 1
            return calls
        }
        return call <= 2 ? .status(503) : .json(User(id: 7, name: "Grace Hopper"))
    case "/hung":
        return .hang
    case "/admin":
        return .json(#"{"code":999,"reason":"Invalid Token."}"#, status: 403)
    default:
        try await Task.sleep(for: .milliseconds(20))
        return .json(User(id: 1, name: "Ada Lovelace"))
    }
}

/// `10 ms`, or `10 ms and 20 ms`.
func milliseconds(_ durations: [Duration]) -> String {
    durations.map { "\(Int($0 / .milliseconds(1))) ms" }.joined(separator: " and ")
}
// snippet.show

// The client: middleware in the recommended order, outermost first, in front of the (fake) transport.
let refreshes = Locked(0)
let auth = TokenRefresher(token: .init("expired-token")) { _ in
    refreshes.withLock { $0 += 1 }  // in an app: call your token endpoint
    return .init("fresh-token", expiresIn: .seconds(3600))
}
let backoffs = Locked<[Duration]>([])
let retry = RetryPolicy(
    backoff: .exponential(base: .milliseconds(10), jitter: .none),
    onRetry: { event in backoffs.withLock { $0.append(event.delay) } }
)
let counter = RequestCounter()
let client = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: api,
    middleware: [.counting(counter), .retry(retry), .authenticating(with: auth), .validatingStatus()],
    errorBody: ErrorBodyDecoder(APIError.self)
)

// 1. 100 concurrent calls find their token expired: one refresh, and each call is sent again with the new token.
let users = await client.sendAll((1...100).map { Request<User>.get("/users/\($0)") }, maxConcurrency: 100)
print(
    "1. 100 concurrent calls with an expired token: \(users.count { (try? $0.get()) != nil }) succeeded,"
        + " \(refreshes.value) token refresh"
)

// 2. A flaky endpoint: two 503s, then an answer. The retry middleware backs off between attempts.
let grace: User = try await client.send(.get("/flaky"))
print(
    "2. a flaky endpoint (503, 503, 200): \(grace.name) on attempt \(flakyCalls.value),"
        + " after backing off \(milliseconds(backoffs.value))"
)

// 3. A hung endpoint: the request's own timeout cuts it.
do {
    let _: User = try await client.send(.get("/hung", timeout: .milliseconds(50)))
} catch let error as CourierError {
    print("3. a hung endpoint: cut by its timeout after \(milliseconds([error.timeout ?? .zero])) (\(error.code))")
}

// 4. A fan-out: 20 calls, at most 5 at a time; the request counter sees them in flight and back to zero.
let fanOutCounter = RequestCounter()
let fanOut = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: api,
    middleware: [.counting(fanOutCounter), .authenticating(with: auth), .validatingStatus()]
)
let fanned = await fanOut.sendAll((1...20).map { Request<User>.get("/users/\($0)") }, maxConcurrency: 5)
await fanOutCounter.waitUntilIdle()
let fanOutCount = fanOutCounter.snapshot
print(
    "4. a fan-out of \(fanned.count) calls, at most 5 at a time: peak \(fanOutCount.peak) in flight,"
        + " \(fanOutCount.inFlight) in flight after"
)

// 5. A typed error body: a 403 whose JSON body the client decodes as `APIError`.
do {
    let _: User = try await client.send(.get("/admin"))
} catch let error as CourierError {
    let body = error.apiError(as: APIError.self)
    print(
        "5. a forbidden call: \(error.code) \(error.statusCode ?? 0)"
            + " with API error \(body?.code ?? 0): \(body?.reason ?? "none")"
    )
}

// 6. Bad input never leaves the process: a header value with CR and LF could inject a header.
let callsBefore = api.callCount
do {
    let _: User = try await client.send(.get("/users/1", headers: ["X-Note": "hi\r\nX-Injected: 1"]))
} catch let error as CourierError {
    print("6. a header value with CR LF: refused (\(error.code)); \(api.callCount - callsBefore) requests sent")
}
