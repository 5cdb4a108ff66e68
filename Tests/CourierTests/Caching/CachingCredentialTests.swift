import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache must never hand one caller of another: a response to another credential, whatever header
/// carries it, a cookie the server set for someone else, or a response the server said not to keep.
@Suite("Caching and credentials", .timeLimit(.minutes(1)))
struct CachingCredentialTests {
    private static let url = URL(string: "https://api.example.test/report")!

    private func request(_ headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: Self.url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func text(_ result: (Data, HTTPURLResponse)) -> String {
        String(decoding: result.0, as: UTF8.self)
    }

    /// A server whose body names the value of `header` it was sent, with `cacheControl`.
    private func tenantServer(header: String, cacheControl: String) -> MockTransport {
        MockTransport { request in
            .status(
                200,
                body: "tenant \(request.header(header) ?? "none")",
                headers: ["Cache-Control": cacheControl, "ETag": "\"v1\""]
            )
        }
    }

    @Test(
        "two tenants with different API keys never get each other's response",
        arguments: [
            ("X-API-Key", "max-age=60"), ("X-API-Key", "public, max-age=60"), ("Api-Key", "public, max-age=60"),
            ("X-Auth-Token", "public, max-age=60"), ("X-Session-Token", "public, max-age=60"),
        ]
    )
    func apiKeyTenantsNeverShare(header: String, cacheControl: String) async throws {
        let transport = tenantServer(header: header, cacheControl: cacheControl)
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        let first = try await client.send(request([header: "tenant-a-key-0001"]))
        let second = try await client.send(request([header: "tenant-b-key-0002"]))
        let anonymous = try await client.send(request())
        #expect(text(first) == "tenant tenant-a-key-0001")
        #expect(text(second) == "tenant tenant-b-key-0002")
        #expect(text(anonymous) == "tenant none")
        #expect(transport.callCount == 3)
    }

    @Test("a header registered as a credential partitions the cache too")
    func registeredHeaderPartitions() async throws {
        let header = "X-Tenant-Partition-Test"
        CredentialHeaders.register(header)
        #expect(CredentialHeaders.contains(header.uppercased()))
        let transport = tenantServer(header: header, cacheControl: "public, max-age=60")
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        let first = try await client.send(request([header: "one"]))
        let second = try await client.send(request([header: "two"]))
        let firstAgain = try await client.send(request([header: "one"]))
        #expect(text(first) == "tenant one")
        #expect(text(second) == "tenant two")
        #expect(text(firstAgain) == "tenant one")
        #expect(transport.callCount == 2)
    }

    @Test(
        "a response that sets a cookie or hands out another credential header is not stored, so no other caller gets it",
        arguments: ["Set-Cookie", "X-Auth-Token", "X-CSRF-Token", "X-Partner-Handout"]
    )
    func credentialHeaderNotReplayed(header: String) async throws {
        // A name of your own counts once registered.
        CredentialHeaders.register("X-Partner-Handout")
        let calls = LockedState(0)
        let transport = MockTransport { _ in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return .status(
                200,
                body: "body \(call)",
                headers: ["Cache-Control": "max-age=60", header: "t\(call)-secret"]
            )
        }
        let store = InMemoryHTTPCacheStore()
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        let first = try await client.send(request())
        let second = try await client.send(request())
        #expect(first.1.value(forHTTPHeaderField: header) == "t1-secret")
        #expect(second.1.value(forHTTPHeaderField: header) == "t2-secret")
        #expect(text(second) == "body 2")
        #expect(transport.callCount == 2)
        let kept = try await store.responses(for: HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET"))
        #expect(kept.isEmpty)
    }

    @Test(
        "a response field whose name only contains a credential word (a signature, a session's consistency token) does not keep it from being stored",
        arguments: ["Signature", "Signature-Input", "x-ms-session-token"]
    )
    func fragmentNamesAreStored(header: String) async throws {
        let transport = MockTransport { _ in
            .status(200, body: "body", headers: ["Cache-Control": "max-age=60", header: "sig1=:abc:"])
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        _ = try await client.send(request())
        let second = try await client.send(request())
        #expect(text(second) == "body")
        #expect(transport.callCount == 1)
    }

    /// A resource stored with `no-cache` (revalidated before each use), whose revalidations answer `304` with
    /// `notModifiedHeaders`; records whether each request was conditional.
    private func revalidatingServer(notModifiedHeaders: [String: String]) -> (MockTransport, LockedState<[Bool]>) {
        let conditional = LockedState<[Bool]>([])
        let transport = MockTransport { request in
            let isConditional = request.header("If-None-Match") != nil
            conditional.withLock { $0.append(isConditional) }
            if isConditional {
                return .status(304, headers: notModifiedHeaders.merging(["ETag": "\"v1\""]) { $1 })
            }
            return .status(200, body: "full", headers: ["Cache-Control": "no-cache", "ETag": "\"v1\""])
        }
        return (transport, conditional)
    }

    @Test("a 304 that says no-store removes the stored response")
    func notModifiedNoStoreRemoves() async throws {
        let (transport, conditional) = revalidatingServer(notModifiedHeaders: ["Cache-Control": "no-store"])
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        _ = try await client.send(request())
        let revalidated = try await client.send(request())
        #expect(revalidated.1.statusCode == 200 && text(revalidated) == "full")
        _ = try await client.send(request())
        // Stored, revalidated once, then gone: the third request asks for the whole response again.
        #expect(conditional.withLock { $0 } == [false, true, false])
    }

    @Test(
        "a 304 that sets a cookie or hands out another credential header serves it to its caller only, and the stored response is dropped",
        arguments: [("Set-Cookie", "session=s-secret"), ("X-Auth-Token", "t-secret")]
    )
    func notModifiedCredentialNotKept(header: String, value: String) async throws {
        let (transport, conditional) = revalidatingServer(notModifiedHeaders: [
            "Cache-Control": "no-cache", header: value,
        ])
        let store = InMemoryHTTPCacheStore()
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        _ = try await client.send(request())
        let revalidated = try await client.send(request())
        #expect(revalidated.1.value(forHTTPHeaderField: header) == value)
        let kept = try await store.responses(for: HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET"))
        #expect(!kept.contains { $0.header(header.lowercased()) != nil })
        let third = try await client.send(request())
        #expect(third.1.value(forHTTPHeaderField: header) == nil)
        #expect(conditional.withLock { $0 } == [false, true, false])
    }

    /// A store that records the keys the cache files responses under.
    private final class KeyRecordingStore: HTTPCacheStore {
        let base = InMemoryHTTPCacheStore()
        let keys = LockedState<[HTTPCacheKey]>([])
        let removed = LockedState<[String]>([])

        func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] {
            keys.withLock { $0.append(key) }
            return try await base.responses(for: key)
        }

        func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {
            keys.withLock { $0.append(key) }
            try await base.store(response, for: key)
        }

        func removeResponses(forResource resource: String) async throws {
            removed.withLock { $0.append(resource) }
            try await base.removeResponses(forResource: resource)
        }
    }

    @Test("a URL's user info (a credential) never reaches the store: keys and invalidations name the URL without it")
    func userInfoNotInKeys() async throws {
        let store = KeyRecordingStore()
        let transport = MockTransport { _ in .status(200, body: "ok", headers: ["Cache-Control": "public, max-age=60"])
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        let url = try #require(URL(string: "https://ada:pw-SECRET-1@api.example.test/report?page=2"))
        _ = try await client.send(URLRequest(url: url))
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        _ = try await client.send(post)
        let resources = store.keys.withLock { $0.map(\.resource) } + store.removed.withLock { $0 }
        #expect(!resources.isEmpty)
        for resource in resources {
            #expect(resource == "https://api.example.test/report?page=2")
        }
        #expect(store.keys.withLock { $0.allSatisfy { $0.partition != "GET" } }, "stored as if anonymous")
    }

    @Test("requests whose URLs carry other user info, or none, never share a response")
    func userInfoPartitions() async throws {
        let transport = MockTransport { request in
            .status(
                200,
                body: "for \(request.urlRequest.url?.user ?? "anonymous")",
                headers: ["Cache-Control": "public, max-age=60"]
            )
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        var answers: [String] = []
        for address in [
            "https://ada:one@api.example.test/report", "https://bob:two@api.example.test/report",
            "https://ada:three@api.example.test/report", "https://api.example.test/report",
            "https://ada:one@api.example.test/report",
        ] {
            answers.append(text(try await client.send(URLRequest(url: try #require(URL(string: address))))))
        }
        #expect(answers == ["for ada", "for bob", "for ada", "for anonymous", "for ada"])
        // The last is the first again: the same credential, served from the cache.
        #expect(transport.callCount == 4)
    }

    @Test("a response to a URL with user info is stored only when it may be shared, as for an Authorization header")
    func userInfoIsCredentialed() async throws {
        let transport = MockTransport { _ in .status(200, body: "ok", headers: ["Cache-Control": "max-age=60"]) }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        let url = try #require(URL(string: "https://ada:pw@api.example.test/report"))
        _ = try await client.send(URLRequest(url: url))
        _ = try await client.send(URLRequest(url: url))
        #expect(transport.callCount == 2)
    }
}
