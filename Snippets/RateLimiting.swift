// Pace requests by the rate limit the server announces, instead of sending them into a 429.
//
// An in-memory API allows 5 requests per one-second window and says so in the IETF `RateLimit` and
// `RateLimit-Policy` fields; beyond that it answers 429. Twelve calls start at once. The first goes alone as
// a probe, the rest wait for its answer; then each window's 5 slots go, the others wait for the next window.
// All twelve succeed in three windows, and the server never refuses one.
//
// Run it with `swift run RateLimiting`. No network is used; it takes about two seconds.

import Courier
import CourierTesting
import Foundation

// snippet.hide
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// 5 requests per one-second window, windows counted from the server's start.
final class FakeAPI: Sendable {
    let start = ContinuousClock.now
    let counts = Locked<[Int: Int]>([:])
    let refusals = Locked(0)

    var transport: MockTransport {
        MockTransport { _ in self.answer() }
    }

    func answer() -> MockResponse {
        let elapsed = start.duration(to: .now)
        let window = Int((elapsed / .seconds(1)).rounded(.down))
        let resetIn = Int((((.seconds(window + 1)) - elapsed) / .seconds(1)).rounded(.up))
        let count = counts.withLock { counts in
            counts[window, default: 0] += 1
            return counts[window]!
        }
        let headers = [
            "RateLimit": "\"default\";r=\(max(0, 5 - count));t=\(resetIn)",
            "RateLimit-Policy": "\"default\";q=5;w=1",
        ]
        guard count <= 5 else {
            refusals.withLock { $0 += 1 }
            return .status(429, headers: headers.merging(["Retry-After": "\(resetIn)"]) { $1 })
        }
        return .status(200, headers: headers)
    }
}

let api = FakeAPI()
let baseURL = URL(string: "https://api.example.test")!
// snippet.show

var policy = RateLimitPolicy()  // follow the server; wait at most 60 s; one quota per host
policy.maximumWait = .seconds(10)
policy.onEvent = { event in
    if case .waited(_, let duration) = event {
        print("  waited \(Int((duration / .milliseconds(1)).rounded())) ms for a slot")
    }
}

let client = Client(
    baseURL: baseURL,
    transport: api.transport,
    middleware: [
        .timeout(.seconds(30)),  // the whole call: a wait past it fails at once
        .retry(.default),  // a 429 that still happens is retried after its Retry-After
        .rateLimiting(policy),  // each attempt takes a slot; no slot, no request
        .timeout(.seconds(5)),  // each attempt: the wait for a slot does not count
    ]
)

let statuses = await withTaskGroup(of: Int.self) { group in
    for _ in 0..<12 {
        group.addTask { (try? await client.send(URLRequest(url: baseURL)).1.statusCode) ?? 0 }
    }
    var statuses: [Int: Int] = [:]
    for await status in group { statuses[status, default: 0] += 1 }
    return statuses
}
print("statuses: \(statuses.sorted { $0.key < $1.key })")
print("requests per window: \(api.counts.value.sorted { $0.key < $1.key }.map(\.value))")
print("refused by the server: \(api.refusals.value)")
