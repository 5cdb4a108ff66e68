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

    @Test("a response that sets a cookie is not stored, so no other caller gets the cookie")
    func setCookieNotReplayed() async throws {
        let calls = LockedState(0)
        let transport = MockTransport { _ in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return .status(
                200,
                body: "body \(call)",
                headers: ["Cache-Control": "max-age=60", "Set-Cookie": "session=s\(call)-secret; HttpOnly"]
            )
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        let first = try await client.send(request())
        let second = try await client.send(request())
        #expect(first.1.value(forHTTPHeaderField: "Set-Cookie") == "session=s1-secret; HttpOnly")
        #expect(second.1.value(forHTTPHeaderField: "Set-Cookie") == "session=s2-secret; HttpOnly")
        #expect(text(second) == "body 2")
        #expect(transport.callCount == 2)
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

    @Test("a 304 that sets a cookie serves it to its caller only, and the stored response is dropped")
    func notModifiedSetCookieNotKept() async throws {
        let (transport, conditional) = revalidatingServer(notModifiedHeaders: [
            "Cache-Control": "no-cache", "Set-Cookie": "session=s-secret",
        ])
        let store = InMemoryHTTPCacheStore()
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        _ = try await client.send(request())
        let revalidated = try await client.send(request())
        #expect(revalidated.1.value(forHTTPHeaderField: "Set-Cookie") == "session=s-secret")
        let kept = try await store.responses(for: HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET"))
        #expect(!kept.contains { $0.header("set-cookie") != nil })
        let third = try await client.send(request())
        #expect(third.1.value(forHTTPHeaderField: "Set-Cookie") == nil)
        #expect(conditional.withLock { $0 } == [false, true, false])
    }
}
