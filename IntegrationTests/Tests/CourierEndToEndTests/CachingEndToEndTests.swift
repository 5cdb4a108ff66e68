import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `.caching` layer against the test server's `/cache` routes, which count their full and `304` answers.
@Suite("HTTP cache over real sockets", .endToEndLimit(minutes: 2))
struct CachingEndToEndTests {
    @Test("100 GETs of a no-cache ETag resource: 1 full response, 99 × 304", arguments: TransportKind.allCases)
    func etagRevalidation(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.caching(), .validatingStatus()])
            for _ in 0..<100 {
                let body = try await e2e.text(client, "/cache/etag/\(e2e.key)")
                #expect(body == "\"v1\"")
            }
            #expect(try await e2e.cacheStats() == CacheStats(full: 1, notModified: 99))
        }
    }

    /// Answered from memory on a manual clock until max-age passes, then revalidated; a POST invalidates.
    @Test("max-age on a manual clock: memory, then a 304, then a POST", arguments: TransportKind.allCases)
    func maxAgeOnManualClock(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let clock = ManualClock()
            let client = e2e.client([.caching(HTTPCache(clock: clock)), .validatingStatus()])
            var request = URLRequest(url: e2e.server.url("/cache/etag/\(e2e.key)?maxAge=60"))
            for _ in 0..<10 {
                _ = try await client.send(request)
                clock.advance(by: .seconds(5))
            }
            #expect(try await e2e.cacheStats() == CacheStats(full: 1, notModified: 0))
            clock.advance(by: .seconds(15))
            _ = try await client.send(request)
            #expect(try await e2e.cacheStats() == CacheStats(full: 1, notModified: 1))

            request.httpMethod = "POST"
            _ = try await client.send(request)
            request.httpMethod = "GET"
            let (body, _) = try await client.send(request)
            #expect(String(decoding: body, as: UTF8.self) == "\"v2\"")
            #expect(try await e2e.cacheStats() == CacheStats(full: 2, notModified: 1))
        }
    }

    @Test("Vary: Accept-Language: each language is stored apart", arguments: TransportKind.allCases)
    func vary(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.caching()])
            for language in ["en", "fr", "en", "fr", "en"] {
                var request = URLRequest(url: e2e.server.url("/cache/vary/\(e2e.key)"))
                request.setValue(language, forHTTPHeaderField: "Accept-Language")
                let (data, _) = try await client.send(request)
                #expect(String(decoding: data, as: UTF8.self) == language)
            }
            #expect(try await e2e.cacheStats().full == 2)
        }
    }

    @Test("two credentials sharing one cache never get each other's response", arguments: TransportKind.allCases)
    func credentialsApart(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let cache = HTTPCache()
            let alice = e2e.client([.authenticating(token: "alice-token"), .caching(cache)])
            let bob = e2e.client([.authenticating(token: "bob-token"), .caching(cache)])
            for _ in 0..<3 {
                let aliceBody = try await e2e.text(alice, "/cache/me/\(e2e.key)")
                let bobBody = try await e2e.text(bob, "/cache/me/\(e2e.key)")
                #expect(aliceBody == "Bearer alice-token")
                #expect(bobBody == "Bearer bob-token")
            }
            #expect(try await e2e.cacheStats().full == 2)
        }
    }
}

extension EndToEnd {
    /// The caching routes' counts for this test's key, read over the inspector's client.
    fileprivate func cacheStats() async throws -> CacheStats {
        try await inspector.client.send(.get("/cache/stats/\(key)"))
    }

    /// The body of a `GET` of `path` through `client`, which must answer 200.
    fileprivate func text(_ client: Client, _ path: String) async throws -> String {
        let (data, response) = try await client.send(URLRequest(url: server.url(path)))
        #expect(response.statusCode == 200)
        return String(decoding: data, as: UTF8.self)
    }
}
