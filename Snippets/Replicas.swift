// Replicas: three "replicas" of a service, each with its own client, share one token store, one quota and one
// cache. 150 calls find the token expired; the token endpoint rotates refresh tokens and revokes the whole family
// when one is presented twice, yet the fleet refreshes once. The API allows 100 requests a second from all of them
// together and answers 429 past that, yet none is refused. A cacheable resource is fetched from the origin once.
//
// Everything runs in memory, in one process: in production each replica is a process, and the stores are the
// `Postgres` trait's (the Fleet article).

// snippet.hide
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// snippet.show
/// A token endpoint with refresh-token rotation and reuse detection: each refresh token works once.
final class TokenEndpoint: Sendable {
    private let state = Locked((refreshToken: "refresh-1", generation: 1, refreshes: 0, revoked: false))

    func refresh(with refreshToken: String?) throws -> TokenRefresher.Token {
        try state.withLock { state in
            guard !state.revoked, refreshToken == state.refreshToken else {
                state.revoked = true  // a reused refresh token: the whole family is logged out
                throw URLError(.userAuthenticationRequired)
            }
            state.generation += 1
            state.refreshes += 1
            state.refreshToken = "refresh-\(state.generation)"
            return TokenRefresher.Token(
                "access-\(state.generation)",
                expiresIn: .seconds(3600),
                refreshToken: state.refreshToken
            )
        }
    }

    var refreshes: Int { state.withLock { $0.refreshes } }
    var revoked: Bool { state.withLock { $0.revoked } }
}

/// The API's quota: 100 requests a second, counted in windows that start with the first request after the last
/// window ended, as many servers count.
final class Quota: Sendable {
    private let state = Locked((start: ContinuousClock.Instant?.none, count: 0, busiest: 0, refused: 0))

    /// Counts a request; `false` when it is past the quota (the API answers 429).
    func admit() -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let start = state.start, now - start < .seconds(1) {
                state.count += 1
            } else {
                (state.start, state.count) = (now, 1)
            }
            state.busiest = max(state.busiest, state.count)
            if state.count > 100 { state.refused += 1 }
            return state.count <= 100
        }
    }

    var busiest: Int { state.withLock { $0.busiest } }
    var refused: Int { state.withLock { $0.refused } }
}

let endpoint = TokenEndpoint()
let quota = Quota()
let originFetches = Locked(0)
let api = MockTransport { request in
    guard quota.admit() else { return .status(429) }
    guard request.header("Authorization") == "Bearer access-2" else { return .status(401) }
    if request.url?.path == "/catalog" {
        originFetches.withLock { $0 += 1 }
        return .status(200, body: "{\"items\":3}", headers: ["Cache-Control": "public, max-age=60"])
    }
    return .ok
}

// What the replicas share: in production, a PostgresSharedTokenStore, a PostgresRateLimitStore, a
// PostgresHTTPCacheStore and a secret from the environment (HTTPCache.PartitionSecret(base64:)).
let tokens = InMemorySharedTokenStore()
let quotaStore = InMemoryRateLimitStore()
let cacheStore = InMemoryHTTPCacheStore(maximumEntries: 500, maximumBytes: 8 * 1024 * 1024)
let partitionSecret = HTTPCache.PartitionSecret((0..<32).map { _ in UInt8.random(in: .min ... .max) })

func makeReplica() -> Client {
    let auth = TokenRefresher(
        token: .init("access-1", refreshToken: "refresh-1"),  // expired: the API accepts only access-2
        sharing: .init(store: tokens)
    ) { replaced in try endpoint.refresh(with: replaced.refreshToken) }
    // The fleet's quota, a little under the API's: it sends a window's requests in its first second, then leaves
    // 300 ms of silence, whatever the phase of the API's own windows.
    let limiter = RateLimiter(
        RateLimitPolicy(sharedLimit: .init(maxRequests: 100, per: .seconds(1), margin: .milliseconds(300))),
        store: quotaStore
    )
    let cache = HTTPCache(store: cacheStore, partitionSecret: partitionSecret)
    return Client(
        baseURL: URL(string: "https://api.example.com")!,
        transport: api,
        middleware: [.authenticating(with: auth), .caching(cache), .rateLimiting(limiter), .validatingStatus()]
    )
}
let replicas = [makeReplica(), makeReplica(), makeReplica()]

let succeeded = await withTaskGroup(of: Bool.self) { group in
    for (index, replica) in replicas.enumerated() {
        for call in 0..<50 {
            group.addTask {
                (try? await replica.send(URLRequest(url: URL(string: "https://api.example.com/r\(index)/\(call)")!)))
                    != nil
            }
        }
    }
    var succeeded = 0
    for await ok in group where ok { succeeded += 1 }
    return succeeded
}
for replica in replicas {
    _ = try await replica.send(URLRequest(url: URL(string: "https://api.example.com/catalog")!))
}

print("calls succeeded:  \(succeeded) of 150")
print("token refreshes:  \(endpoint.refreshes) (family revoked: \(endpoint.revoked))")
print("store leases:     \(tokens.leasesTaken)")
print("busiest second:   \(quota.busiest) requests of 100 allowed, \(quota.refused) answered 429")
print("catalog fetched:  \(originFetches.value) time(s) from the origin for 3 replicas")
