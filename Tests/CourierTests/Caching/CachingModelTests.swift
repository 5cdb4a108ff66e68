import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Seeded random runs of GETs with three credentials (two tokens and none), server-side changes, unsafe
/// requests and the passing of time, against a server that picks a different `Cache-Control` for each answer and
/// sometimes answers a conditional request about an older version with a `304` carrying the current version's tag.
/// The server keeps, per credential and path, what it last told that credential (version, when, lifetime);
/// every response the client gets is checked against it.
@Suite("Middleware.caching model")
struct CachingModelTests {
    private static let paths = ["/a", "/b"]
    private static let credentials: [String?] = [nil, "Bearer alice", "Bearer bob"]
    private static let policies = [
        "public, max-age=10", "must-revalidate, max-age=25", "private, max-age=5, s-maxage=5", "max-age=15",
        "no-cache", "no-store", "public, max-age=0",
    ]

    /// What the server last told one credential about one path.
    private struct Told {
        var version: Int
        var at: Duration
        /// How long the client may reuse the answer without asking again.
        var lifetime: Duration
    }

    private struct ServerState {
        var versions: [String: Int] = [:]
        var told: [String: Told] = [:]
        var random: SplitMix64
        var calls = 0
    }

    private static func told(_ credential: String?, _ path: String) -> String {
        (credential ?? "anonymous") + " " + path
    }

    /// The lifetime a client may give an answer with `policy` to a request with or without a credential.
    private static func lifetime(of policy: String, hasCredential: Bool, isNotModified: Bool) -> Duration {
        if policy.contains("no-store") || policy.contains("no-cache") { return .zero }
        let allowed = policy.contains("public") || policy.contains("must-revalidate") || policy.contains("s-maxage")
        if hasCredential, !allowed, !isNotModified { return .zero }
        let maxAge = policy.split(separator: ",").compactMap { part -> Int? in
            let part = part.trimmingCharacters(in: .whitespaces)
            return part.hasPrefix("max-age=") ? Int(part.dropFirst("max-age=".count)) : nil
        }.first
        return .seconds(maxAge ?? 0)
    }

    @Test(
        "no response crosses credentials, and none is reused past what the server last allowed",
        arguments: 0..<24 as Range<UInt64>
    )
    func invariant(seed: UInt64) async throws {
        let clock = ManualClock()
        let state = LockedState(ServerState(random: SplitMix64(seed: seed &* 7919)))
        let transport = MockTransport { request in
            let path = request.urlRequest.url?.path ?? "/"
            let credential = request.header("Authorization")
            let method = request.urlRequest.httpMethod ?? "GET"
            let now = clock.now.offset
            return state.withLock { state in
                state.calls += 1
                if method == "POST" {
                    state.versions[path, default: 1] += 1
                    return .status(204)
                }
                let version = state.versions[path, default: 1]
                let tag = "\"\(version)\""
                let policy = Self.policies[Int(state.random.next() % UInt64(Self.policies.count))]
                let condition = request.header("If-None-Match")
                // A hostile (or load-balanced) origin: asked about an older version, it sometimes answers 304 with
                // the current version's tag, which says nothing about the stored body.
                let lies = condition != nil && condition != tag && state.random.next() % 3 == 0
                let notModified = condition == tag || lies
                state.told[Self.told(credential, path)] = Told(
                    version: version,
                    at: now,
                    lifetime: Self.lifetime(of: policy, hasCredential: credential != nil, isNotModified: notModified)
                )
                let headers = ["ETag": tag, "Cache-Control": policy]
                if notModified { return .status(304, headers: headers) }
                return .status(200, body: "\(version) \(credential ?? "anonymous")", headers: headers)
            }
        }
        let cache = HTTPCache(clock: clock, startDate: Date(timeIntervalSince1970: 1_700_000_000))
        let client = Client(transport: transport, middleware: [.caching(cache)])
        var random = SplitMix64(seed: seed)
        var hits = 0
        for step in 0..<300 {
            let path = Self.paths[Int(random.next() % 2)]
            let credential = Self.credentials[Int(random.next() % 3)]
            var request = URLRequest(url: URL(string: "https://api.example.test\(path)")!)
            if let credential { request.setValue(credential, forHTTPHeaderField: "Authorization") }
            switch random.next() % 10 {
            case 0, 1:
                clock.advance(by: .seconds(Int(random.next() % 12)))
            case 2:
                state.withLock { $0.versions[path, default: 1] += 1 }
            case 3:
                request.httpMethod = "POST"
                _ = try await client.send(request)
            default:
                let callsBefore = state.withLock { $0.calls }
                let (data, response) = try await client.send(request)
                let (calls, told, current) = state.withLock {
                    ($0.calls, $0.told[Self.told(credential, path)], $0.versions[path, default: 1])
                }
                let body = String(decoding: data, as: UTF8.self).split(separator: " ", maxSplits: 1)
                let context = Comment(rawValue: "seed \(seed), step \(step), \(credential ?? "anonymous") \(path)")
                #expect(response.statusCode == 200, context)
                #expect(body.count == 2 && String(body[1]) == (credential ?? "anonymous"), context)
                if calls == callsBefore {
                    // Answered from the cache: what the server last told this credential, still fresh.
                    hits += 1
                    let told = try #require(told, context)
                    #expect(String(body[0]) == String(told.version), context)
                    #expect(clock.now.offset - told.at < told.lifetime, context)
                } else {
                    #expect(String(body[0]) == String(current), context)
                }
            }
        }
        // The run exercised the cache, not only the server.
        #expect(hits > 0)
    }
}
