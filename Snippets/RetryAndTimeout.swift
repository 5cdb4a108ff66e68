// Retry transient failures and bound how long a call may take.
//
// A flaky in-memory service first answers 503 with `Retry-After: 0`, then loses the connection, then
// answers. The retry policy absorbs both failures and reports each retry through its hook. A second
// service never answers: the per-attempt timeout cancels each hung attempt, the retry tries again, and
// the whole-call timeout ends the call — the caller waits 300 ms, not 3 × 100 ms plus backoff.
//
// Run it with `swift run RetryAndTimeout`. No network is used.

import Courier
import CourierTesting
import Foundation

// snippet.hide
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct User: Decodable {
    let id: Int
    let name: String
}

func milliseconds(_ duration: Duration) -> Int {
    Int((duration / .milliseconds(1)).rounded())
}

let baseURL = URL(string: "https://api.example.test")!
let flaky = MockTransport(
    .status(503, headers: ["Retry-After": "0"]),
    then: .failure(URLError(.networkConnectionLost)),
    .json(#"{"id": 42, "name": "Ada"}"#)
)
let hanging = MockTransport(.hang)
// snippet.show

var policy = RetryPolicy.default  // 3 attempts, exponential backoff with full jitter, a retry budget
policy.backoff = .exponential(base: .milliseconds(20))
policy.onRetry = { event in
    let reason =
        switch event.reason {
        case .status(let status): "status \(status)"
        case .error(let error): (error as? CourierError).map { "\($0.code)" } ?? "\(error)"
        }
    print(
        "  retry after \(reason): attempt \(event.attempt) of \(event.maximumAttempts) in \(milliseconds(event.delay)) ms"
    )
}

// The documented order: whole-call timeout → retry → authentication → per-attempt timeout →
// status validation → transport.
let middleware: [Middleware] = [
    .timeout(.milliseconds(300)),
    .retry(policy),
    .authenticating(token: "demo-token"),
    .timeout(.milliseconds(100)),
    .validatingStatus(),
]

let client = Client(baseURL: baseURL, transport: flaky, middleware: middleware)
let user: User = try await client.send(.get("/users/42"))
print("flaky service: got \(user.name) after \(flaky.callCount) attempts")

let stuck = Client(baseURL: baseURL, transport: hanging, middleware: middleware)
let start = ContinuousClock.now
do {
    let _: User = try await stuck.send(.get("/users/42"))
} catch let error as CourierError where error.code == .timedOut {
    let waited = milliseconds(start.duration(to: .now))
    print(
        "hanging service: \(error.code) after about \(waited) ms (timeout \(milliseconds(error.timeout ?? .zero)) ms)"
    )
    print("  attempts: \(hanging.callCount), each cancelled: \(hanging.cancellationCount == hanging.callCount)")
}
