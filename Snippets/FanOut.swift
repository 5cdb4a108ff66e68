// Fan out many requests from one call, and keep the upstream safe while doing it.
//
// `sendAll` runs requests in a task group that never holds more than `maxConcurrency` children and returns
// one `Result` per request, in input order. The flow-control middleware sit in the client's stack:
// `limitingConcurrency` caps what reaches the upstream across every caller, `coalescing` turns identical
// concurrent GETs into one call, `circuitBreaker` fails fast while a host is down, and `hedging` sends a
// second attempt when the first is slow. Everything here runs in memory, against a mock transport.

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

// An in-memory upstream: every fifth user is missing.
let transport = MockTransport { request in
    await Task.yield()
    let id = Int(request.url!.lastPathComponent) ?? 0
    if id.isMultiple(of: 5) { return .status(404) }
    return .json(User(id: id, name: "user \(id)"))
}
// snippet.show

let counter = RequestCounter()  // outermost: it counts every request a caller makes
let client = Client(
    baseURL: URL(string: "https://api.example.com")!,
    transport: transport,
    middleware: [
        .counting(counter),
        .coalescing(),
        .circuitBreaker(failureThreshold: 5, cooldown: .seconds(30)),
        .limitingConcurrency(maxInFlight: 8, perHost: 8),
    ]
)

// One result per request, in input order; a 404 does not lose the others.
let ids = Array(1...40)
let results = await client.sendAll(ids.map { Request<User>.get("/users/\($0)") }, maxConcurrency: 16)
let found = results.compactMap { try? $0.get() }
print("found \(found.count) of \(ids.count) users; first: \(found[0].name)")

// All or nothing: the first failure cancels the rest.
do {
    _ = try await client.sendAllOrThrow(ids.map { Request<User>.get("/users/\($0)") }, maxConcurrency: 16)
} catch let error as CourierError {
    print("sendAllOrThrow stopped at the first failure: \(error.code), status \(error.statusCode ?? 0)")
}

// Streaming: results arrive as requests finish, and nothing is accumulated.
var names = 0
await client.sendEach((1...1_000).lazy.map { Request<User>.get("/users/\($0)") }, maxConcurrency: 32) { _, result in
    if case .success = result { names += 1 }
}
print("streamed \(names) users; at most \(counter.snapshot.peak) requests were in flight at once")
