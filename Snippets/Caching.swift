// Keep a private HTTP cache in front of an API: fresh responses answer from memory, stale ones are
// revalidated with `If-None-Match`, and a `304` costs the server no body (GitHub does not even count it
// against the rate limit).
//
// The cache sits inside `.authenticating`, so each response is filed under the credential that fetched it
// (as an opaque hash, never the token itself): one user's response never answers another's request. Here a
// mock server sends `ETag` and `Cache-Control: max-age=60`, and a manual clock stands in for a minute
// passing.

// snippet.hide
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// An in-memory API: one resource with an ETag, fresh for 60 seconds; `If-None-Match` gets a 304.
let counts = Locked((full: 0, notModified: 0))
let transport = MockTransport { request in
    let headers = ["ETag": "\"v1\"", "Cache-Control": "public, max-age=60"]
    if request.header("If-None-Match") == "\"v1\"" {
        counts.withLock { $0.notModified += 1 }
        return .status(304, headers: headers)
    }
    counts.withLock { $0.full += 1 }
    return .status(200, body: "{\"login\":\"octocat\"}", headers: headers)
}
let clock = ManualClock()
// snippet.show

let cache = HTTPCache(
    store: InMemoryHTTPCacheStore(maximumEntries: 500, maximumBytes: 8 * 1024 * 1024),
    clock: clock,  // omit it in production: the continuous clock is the default
    onEvent: { event in print("cache:", event) }
)
let client = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: transport,
    middleware: [.retry(.default), .authenticating(token: "example-token"), .caching(cache), .validatingStatus()]
)

let user = URLRequest(url: URL(string: "https://api.example.com/user")!)
for _ in 0..<3 { _ = try await client.send(user) }  // one request, two hits
clock.advance(by: .seconds(61))  // the response is now stale
let (body, response) = try await client.send(user)
print(response.statusCode, String(decoding: body, as: UTF8.self))  // 200, the stored body, after a 304
print("full responses: \(counts.value.full), revalidations: \(counts.value.notModified)")
