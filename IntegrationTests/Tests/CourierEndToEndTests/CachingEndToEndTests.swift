import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("HTTP cache over real sockets", .timeLimit(.minutes(2)))
struct CachingEndToEndTests {
    @Test("100 GETs of a no-cache ETag resource: 1 full response, 99 × 304", arguments: TransportKind.allCases)
    func etagRevalidation(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = kind.client(of: server, middleware: [.caching(), .validatingStatus()])
            for _ in 0..<100 {
                let body = try await text(client, server, "/cache/etag/\(key)")
                #expect(body == "\"v1\"")
            }
            #expect(try await stats(server, key) == CacheStats(full: 1, notModified: 99))
        }
    }

    /// Answered from memory on a manual clock until max-age passes, then revalidated; a POST invalidates.
    @Test("max-age on a manual clock: memory, then a 304, then a POST", arguments: TransportKind.allCases)
    func maxAgeOnManualClock(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let clock = ManualClock()
            let client = kind.client(of: server, middleware: [.caching(HTTPCache(clock: clock)), .validatingStatus()])
            let path = "/cache/etag/\(key)?maxAge=60"
            var request = URLRequest(url: server.url(path))
            for _ in 0..<10 {
                _ = try await client.send(request)
                clock.advance(by: .seconds(5))
            }
            #expect(try await stats(server, key) == CacheStats(full: 1, notModified: 0))
            clock.advance(by: .seconds(15))
            _ = try await client.send(request)
            #expect(try await stats(server, key) == CacheStats(full: 1, notModified: 1))

            request.httpMethod = "POST"
            _ = try await client.send(request)
            request.httpMethod = "GET"
            let (body, _) = try await client.send(request)
            #expect(String(decoding: body, as: UTF8.self) == "\"v2\"")
            #expect(try await stats(server, key) == CacheStats(full: 2, notModified: 1))
        }
    }

    @Test("Vary: Accept-Language: each language is stored apart", arguments: TransportKind.allCases)
    func vary(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = kind.client(of: server, middleware: [.caching()])
            for language in ["en", "fr", "en", "fr", "en"] {
                var request = URLRequest(url: server.url("/cache/vary/\(key)"))
                request.setValue(language, forHTTPHeaderField: "Accept-Language")
                let (data, _) = try await client.send(request)
                #expect(String(decoding: data, as: UTF8.self) == language)
            }
            #expect(try await stats(server, key).full == 2)
        }
    }

    @Test("two credentials sharing one cache never get each other's response", arguments: TransportKind.allCases)
    func credentialsApart(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let cache = HTTPCache()
            let alice = kind.client(of: server, middleware: [.authenticating(token: "alice-token"), .caching(cache)])
            let bob = kind.client(of: server, middleware: [.authenticating(token: "bob-token"), .caching(cache)])
            for _ in 0..<3 {
                let aliceBody = try await text(alice, server, "/cache/me/\(key)")
                let bobBody = try await text(bob, server, "/cache/me/\(key)")
                #expect(aliceBody == "Bearer alice-token")
                #expect(bobBody == "Bearer bob-token")
            }
            #expect(try await stats(server, key).full == 2)
        }
    }
}

/// The caching counts of `key`, read over a client of its own.
private func stats(_ server: RunningServer, _ key: String) async throws -> CacheStats {
    try await Inspector(server).client.send(.get("/cache/stats/\(key)"))
}

private func text(_ client: Client, _ server: RunningServer, _ path: String) async throws -> String {
    let (data, response) = try await client.send(URLRequest(url: server.url(path)))
    #expect(response.statusCode == 200)
    return String(decoding: data, as: UTF8.self)
}
