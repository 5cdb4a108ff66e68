import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.caching")
struct CachingTests: CachingSuite {
    private let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// Collects the cache's events.
    private final class Events: Sendable {
        let recorded = LockedState<[CacheEvent.Kind]>([])
        var kinds: [CacheEvent.Kind] { recorded.withLock { $0 } }
        func record(_ event: CacheEvent) { recorded.withLock { $0.append(event.kind) } }
    }

    private func cache(
        _ clock: ManualClock,
        _ events: Events? = nil,
        store: any HTTPCacheStore = InMemoryHTTPCacheStore()
    ) -> HTTPCache {
        guard let events else { return HTTPCache(store: store, clock: clock, startDate: start) }
        return HTTPCache(store: store, clock: clock, startDate: start, onEvent: { event in events.record(event) })
    }

    /// A server answering with `cacheControl`, and a client caching on a manual clock that nothing advances.
    private func serverAndClient(_ cacheControl: String = "max-age=60") -> (CacheTestServer, Client) {
        let server = CacheTestServer()
        server.set(cacheControl: cacheControl)
        return (
            server,
            Client(baseURL: exampleBaseURL, transport: server.transport, middleware: [.caching(cache(ManualClock()))])
        )
    }

    /// A client whose requests the returned transport holds until the test opens it.
    private func heldClient() -> (HoldingTransport, HTTPCache, Client) {
        let holding = HoldingTransport(wrapping: CacheTestServer().transport)
        let shared = cache(ManualClock())
        return (holding, shared, Client(baseURL: exampleBaseURL, transport: holding, middleware: [.caching(shared)]))
    }

    @Test("a fresh response answers from memory until max-age passes; then a 304 answers with the stored body as 200")
    func freshThenRevalidated() async throws {
        let server = CacheTestServer()
        let clock = ManualClock()
        let events = Events()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: server.transport,
            middleware: [.caching(cache(clock, events))]
        )

        let first = try await client.send(get("/items"))
        clock.advance(by: .seconds(59))
        let second = try await client.send(get("/items"))
        #expect(server.full == 1 && server.notModified == 0)
        #expect(text(second) == text(first))
        #expect(second.1.value(forHTTPHeaderField: "Age") == "59")

        clock.advance(by: .seconds(1))
        let third = try await client.send(get("/items"))
        #expect(server.full == 1 && server.notModified == 1)
        #expect(third.1.statusCode == 200)
        #expect(text(third) == "\"v1\" anonymous")
        #expect(events.kinds == [.miss, .stored, .hit, .revalidated])

        // The 304 restarted the lifetime.
        clock.advance(by: .seconds(30))
        _ = try await client.send(get("/items"))
        #expect(server.full == 1 && server.notModified == 1)
    }

    @Test(
        "100 GETs of a no-cache resource with an ETag: one full response and 99 revalidations",
        .timeLimit(.minutes(1))
    )
    func hundredRevalidations() async throws {
        let (server, client) = serverAndClient("no-cache")
        for _ in 0..<100 {
            let result = try await client.send(get("/items"))
            #expect(result.1.statusCode == 200 && text(result) == "\"v1\" anonymous")
        }
        #expect(server.full == 1)
        #expect(server.notModified == 99)
    }

    @Test("a revalidation that gets a 200 (the resource changed) replaces the stored response")
    func changedResourceReplaces() async throws {
        let (server, client) = serverAndClient("no-cache")
        _ = try await client.send(get("/items"))
        server.change("/items")
        #expect(text(try await client.send(get("/items"))) == "\"v2\" anonymous")
        #expect(text(try await client.send(get("/items"))) == "\"v2\" anonymous")
        #expect(server.full == 2 && server.notModified == 1)
    }

    @Test("responses are filed per credential: one credential's never answers another's or an anonymous request")
    func credentialsNeverShare() async throws {
        let (server, client) = serverAndClient("public, max-age=600")
        let alice = try await client.send(get("/me", ["Authorization": "Bearer alice"]))
        let bob = try await client.send(get("/me", ["Authorization": "Bearer bob"]))
        let anonymous = try await client.send(get("/me"))
        let aliceAgain = try await client.send(get("/me", ["Authorization": "Bearer alice"]))
        #expect(text(alice) == "\"v1\" Bearer alice")
        #expect(text(bob) == "\"v1\" Bearer bob")
        #expect(text(anonymous) == "\"v1\" anonymous")
        #expect(text(aliceAgain) == "\"v1\" Bearer alice")
        #expect(server.full == 3)
    }

    @Test("the credential an authenticating layer attaches in another header (X-API-Key) partitions entries too")
    func attachedHeaderPartitions() async throws {
        let server = CacheTestServer()
        server.set(cacheControl: "public, max-age=600")
        let transport = MockTransport { request in
            .status(200, body: request.header("X-API-Key") ?? "none", headers: ["Cache-Control": "public, max-age=600"])
        }
        let shared = cache(ManualClock())
        let first = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(token: "key-one", scheme: .header("X-API-Key")), .caching(shared)]
        )
        let second = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(token: "key-two", scheme: .header("X-API-Key")), .caching(shared)]
        )
        #expect(text(try await first.send(get("/me"))) == "key-one")
        #expect(text(try await second.send(get("/me"))) == "key-two")
        #expect(text(try await first.send(get("/me"))) == "key-one")
        #expect(transport.callCount == 2)
    }

    @Test("a response to a request with Authorization is stored only with public, must-revalidate or s-maxage")
    func authorizationNeedsPermission() async throws {
        let (server, client) = serverAndClient("private, max-age=600")
        for _ in 0..<2 { _ = try await client.send(get("/me", ["Authorization": "Bearer alice"])) }
        #expect(server.full == 2)
        server.set(cacheControl: "private, max-age=600, s-maxage=600")
        for _ in 0..<2 { _ = try await client.send(get("/me", ["Authorization": "Bearer alice"])) }
        #expect(server.full == 3)
    }

    @Test("Vary: a request with other values of the named headers misses; one with the same values hits")
    func vary() async throws {
        let transport = MockTransport { request in
            .status(
                200,
                body: request.header("Accept-Language") ?? "none",
                headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"]
            )
        }
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.caching(cache(ManualClock()))])
        #expect(text(try await client.send(get("/greeting", ["Accept-Language": "en"]))) == "en")
        #expect(text(try await client.send(get("/greeting", ["Accept-Language": "fr"]))) == "fr")
        #expect(text(try await client.send(get("/greeting", ["Accept-Language": "en"]))) == "en")
        #expect(text(try await client.send(get("/greeting"))) == "none")
        #expect(transport.callCount == 3)
    }

    @Test("Vary: Authorization: the stored response keeps no credential, and credentials still do not share")
    func varyAuthorization() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport { request in
            .status(
                200,
                body: request.header("Authorization") ?? "none",
                headers: ["Cache-Control": "public, max-age=600", "Vary": "Authorization"]
            )
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(cache(ManualClock(), store: store))]
        )
        for token in ["Bearer vary-alice", "Bearer vary-bob", "Bearer vary-alice"] {
            #expect(text(try await client.send(get("/v", ["Authorization": token]))) == token)
        }
        #expect(transport.callCount == 2)
        let stored = store.allResponses
        #expect(stored.count == 2)
        #expect(stored.allSatisfy { !$0.variant.contains("vary-") && !String(describing: $0).contains("vary-") })
    }

    @Test("Vary: * is never stored")
    func varyStar() async throws {
        let transport = MockTransport(.status(200, body: "x", headers: ["Cache-Control": "max-age=600", "Vary": "*"]))
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.caching(cache(ManualClock()))])
        for _ in 0..<2 { _ = try await client.send(get("/x")) }
        #expect(transport.callCount == 2)
    }

    @Test("no-store in the response or the request keeps it out of the cache")
    func noStore() async throws {
        let (server, client) = serverAndClient()
        server.set(cacheControl: "no-store, max-age=600")
        for _ in 0..<2 { _ = try await client.send(get("/a")) }
        server.set(cacheControl: "max-age=600")
        for _ in 0..<2 { _ = try await client.send(get("/b", ["Cache-Control": "no-store"])) }
        #expect(server.full == 4)
    }

    @Test("a successful unsafe request invalidates its URI and same-origin Location for every credential")
    func unsafeInvalidates() async throws {
        let events = Events()
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport { request in
            if request.urlRequest.httpMethod == "POST" {
                return .status(201, headers: ["Location": "/items/2"])
            }
            return .status(200, body: "item", headers: ["Cache-Control": "public, max-age=600"])
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(cache(ManualClock(), events, store: store))]
        )
        _ = try await client.send(get("/items/1"))
        _ = try await client.send(get("/items/1", ["Authorization": "Bearer alice"]))
        _ = try await client.send(get("/items/2"))
        _ = try await client.send(get("/items/3"))
        #expect(store.count == 4)
        _ = try await client.send(get("/items/1", method: "POST"))
        #expect(store.count == 1)
        #expect(events.kinds.suffix(2) == [.invalidated, .invalidated])
        _ = try await client.send(get("/items/3"))
        #expect(transport.callCount == 5)
    }

    @Test("an unsafe request that fails invalidates nothing")
    func failedUnsafeKeeps() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport { request in
            request.urlRequest.httpMethod == "DELETE"
                ? .status(500) : .status(200, headers: ["Cache-Control": "max-age=600"])
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(cache(ManualClock(), store: store))]
        )
        _ = try await client.send(get("/items/1"))
        _ = try await client.send(get("/items/1", method: "DELETE"))
        #expect(store.count == 1)
    }

    @Test("stale-if-error: a stale response that allows it answers a 503 and a thrown error; without it they pass")
    func staleIfError() async throws {
        let server = CacheTestServer()
        server.set(cacheControl: "max-age=10, stale-if-error=60")
        let clock = ManualClock()
        let events = Events()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: server.transport,
            middleware: [.caching(cache(clock, events))]
        )
        _ = try await client.send(get("/a"))
        clock.advance(by: .seconds(30))
        server.fail(with: .status(503))
        #expect(text(try await client.send(get("/a"))) == "\"v1\" anonymous")
        server.fail(with: .networkConnectionLost)
        #expect(text(try await client.send(get("/a"))) == "\"v1\" anonymous")
        #expect(events.kinds.suffix(2) == [.staleIfError, .staleIfError])
        clock.advance(by: .seconds(41))
        await #expect(throws: (any Error).self) { try await client.send(get("/a")) }

        server.fail(with: nil)
        server.set(cacheControl: "max-age=10")
        _ = try await client.send(get("/b"))
        clock.advance(by: .seconds(11))
        server.fail(with: .status(503))
        #expect(try await client.send(get("/b")).1.statusCode == 503)
    }

    @Test("with status validation inside, the 304 it throws still revalidates")
    func validationInside() async throws {
        let server = CacheTestServer()
        server.set(cacheControl: "no-cache")
        let client = Client(
            baseURL: exampleBaseURL,
            transport: server.transport,
            middleware: [.caching(cache(ManualClock())), .validatingStatus()]
        )
        _ = try await client.send(get("/a"))
        let again = try await client.send(get("/a"))
        #expect(again.1.statusCode == 200 && text(again) == "\"v1\" anonymous")
        #expect(server.notModified == 1)
    }

    @Test("concurrent misses for the same request go to the server once", .timeLimit(.minutes(1)))
    func concurrentMissesOnce() async throws {
        let (holding, shared, client) = heldClient()
        let batch = Task { await client.sendAll(Array(repeating: get("/a"), count: 50), maxConcurrency: 50) }
        await holding.waitUntilHolding(1)
        try await waitUntil { shared.waitingCallers == 50 }
        holding.open()
        let results = await batch.join()
        #expect(try results.map { text(try $0.get()) } == Array(repeating: "\"v1\" anonymous", count: 50))
        #expect(holding.requests.count == 1)
    }

    @Test(
        "a cancelled caller of a shared miss gets CancellationError; the other caller gets the response",
        .timeLimit(.minutes(1))
    )
    func cancellation() async throws {
        let (holding, shared, client) = heldClient()
        let first = Task { try await client.send(get("/a")) }
        await holding.waitUntilHolding(1)
        let second = Task { try await client.send(get("/a")) }
        try await waitUntil { shared.waitingCallers == 2 }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.join() }
        holding.open()
        #expect(text(try await second.join()) == "\"v1\" anonymous")
        #expect(holding.requests.count == 1)
    }

    @Test("listed outside .authenticating, the cache fails the request and stores nothing")
    func misplacedOutsideAuthentication() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport(.status(200, headers: ["Cache-Control": "public, max-age=600"]))
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(cache(ManualClock(), store: store)), .authenticating(token: "secret-token")]
        )
        let error = await #expect(throws: CourierError.self) { try await client.send(get("/me")) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.description.contains("secret-token") == false)
        #expect(store.count == 0)
    }

    @Test("listed outside .headers with a credential field, a cache shared by two tenants fails and stores nothing")
    func misplacedOutsideCredentialHeaders() async throws {
        let store = InMemoryHTTPCacheStore()
        let shared = cache(ManualClock(), store: store)
        let transport = MockTransport { request in
            .status(200, body: request.header("X-API-Key") ?? "none", headers: ["Cache-Control": "max-age=600"])
        }
        func client(_ key: String) -> Client {
            Client(
                baseURL: exampleBaseURL,
                transport: transport,
                middleware: [.caching(shared), .headers(["X-API-Key": key, "Accept-Language": "en"])]
            )
        }
        for tenant in ["tenant-a-key", "tenant-b-key"] {
            let error = await #expect(throws: CourierError.self) { try await client(tenant).send(get("/reports")) }
            #expect(error?.code == .invalidRequest)
        }
        #expect(store.count == 0)
        // Fields that are not credentials are no reason to refuse.
        let plain = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(shared), .headers(["Accept-Language": "en"])]
        )
        _ = try await plain.send(get("/reports"))
        #expect(store.count == 1)
    }

    /// The tenant a test's caller acts for, read by a token provider as a multi-tenant service would.
    @TaskLocal private static var tenant = "nobody"

    @Test("listed outside .authenticating, a cache gives a caller that joined another's miss no error of the other's")
    func misplacedErrorNotShared() async throws {
        let holding = HoldingTransport(
            wrapping: MockTransport { request in .status(403, body: request.header("Authorization") ?? "none") }
        )
        let shared = cache(ManualClock())
        let client = Client(
            baseURL: exampleBaseURL,
            transport: holding,
            middleware: [.caching(shared), .authenticating(tokenProvider: { Self.tenant }), .validatingStatus()]
        )
        let alice = Task { try await Self.$tenant.withValue("alice") { try await client.send(get("/me")) } }
        await holding.waitUntilHolding(1)
        let bob = Task { try await Self.$tenant.withValue("bob") { try await client.send(get("/me")) } }
        try await waitUntil { shared.waitingCallers == 2 }
        holding.open()
        for caller in [alice, bob] {
            let error = await #expect(throws: CourierError.self) { try await caller.join() }
            #expect(error?.code == .invalidRequest)
            #expect(error?.responseBody == nil)
        }
    }

    @Test("listed outside a behavior whose additional headers carry a credential, a cache fails and stores nothing")
    func misplacedOutsideBehaviorCredential() async throws {
        struct TenantKey: RequestBehavior {
            let key: String
            var additionalHeaders: HTTPHeaders { ["X-API-Key": key] }
        }
        let store = InMemoryHTTPCacheStore()
        let shared = cache(ManualClock(), store: store)
        let transport = MockTransport { request in
            .status(200, body: request.header("X-API-Key") ?? "none", headers: ["Cache-Control": "max-age=600"])
        }
        for tenant in ["tenant-a-key", "tenant-b-key"] {
            let client = Client(
                baseURL: exampleBaseURL,
                transport: transport,
                middleware: [.caching(shared), .behavior(TenantKey(key: tenant))]
            )
            let error = await #expect(throws: CourierError.self) { try await client.send(get("/reports")) }
            #expect(error?.code == .invalidRequest)
        }
        #expect(store.count == 0)
    }

    @Test("HEAD responses are stored apart from GET, with no body")
    func head() async throws {
        let transport = MockTransport { request in
            .status(
                200,
                body: request.urlRequest.httpMethod == "HEAD" ? "" : "body",
                headers: ["Cache-Control": "max-age=600"]
            )
        }
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.caching(cache(ManualClock()))])
        _ = try await client.send(get("/a", method: "HEAD"))
        let head = try await client.send(get("/a", method: "HEAD"))
        #expect(head.0.isEmpty)
        #expect(text(try await client.send(get("/a"))) == "body")
        #expect(transport.callCount == 2)
    }

    @Test("requests with their own conditional or Range header, or a body, pass through unstored")
    func ownConditionalsBypass() async throws {
        let (server, client) = serverAndClient()
        _ = try await client.send(get("/a", ["If-None-Match": "\"v0\""]))
        _ = try await client.send(get("/a", ["Range": "bytes=0-1"]))
        var withBody = get("/a")
        withBody.httpBody = Data("query".utf8)
        _ = try await client.send(withBody)
        _ = try await client.send(get("/a"))
        #expect(server.full == 4)
    }

    private struct FailingStore: HTTPCacheStore {
        struct Failure: Error {}
        func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] { throw Failure() }
        func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws { throw Failure() }
        func removeResponses(forResource resource: String) async throws { throw Failure() }
    }

    @Test("a store that throws: the request goes to the server and the failure is reported as an event")
    func failingStore() async throws {
        let server = CacheTestServer()
        let events = Events()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: server.transport,
            middleware: [.caching(cache(ManualClock(), events, store: FailingStore()))]
        )
        #expect(text(try await client.send(get("/a"))) == "\"v1\" anonymous")
        #expect(events.kinds == [.storeFailed, .storeFailed, .miss, .storeFailed])
    }

    private struct CancellingStore: HTTPCacheStore {
        func responses(for key: HTTPCacheKey) async throws -> [CachedResponse] { throw CancellationError() }
        func store(_ response: CachedResponse, for key: HTTPCacheKey) async throws {}
        func removeResponses(forResource resource: String) async throws {}
    }

    @Test("a CancellationError from the store is passed on, and nothing is sent")
    func storeCancellation() async throws {
        let transport = MockTransport.ok
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.caching(cache(ManualClock(), store: CancellingStore()))]
        )
        await #expect(throws: CancellationError.self) { try await client.send(get("/a")) }
        #expect(transport.callCount == 0)
    }

    @Test("keys and events say nothing of the credential")
    func nothingSecret() async throws {
        let identity = CredentialIdentity()
        let request = get("/me", ["Authorization": "Bearer very-secret-value"])
        let partition = try #require(identity.identity(of: request))
        #expect(partition.count == 32)
        #expect(!partition.contains("secret"))
        #expect(identity.identity(of: get("/me", ["Authorization": "Bearer other"])) != partition)
        #expect(identity.identity(of: request) == partition)
        #expect(CredentialIdentity().identity(of: request) != partition)
        #expect(identity.identity(of: get("/me")) == nil)
        let event = CacheEvent(kind: .hit, method: "GET", url: URL(string: "https://a.test/x?access_token=abc123")!)
        #expect(event.description == "hit GET https://a.test/x?access_token=REDACTED")
        let key = HTTPCacheKey(resource: "https://a.test/x?token=abc123", partition: "GET " + partition)
        #expect(key.description == "GET \(partition) https://a.test/x?token=REDACTED")
    }

    @Test("a 304 carrying Age: 1e20 does not trap: the stored body is served, stale, with a clamped Age")
    func hugeAgeOn304() async throws {
        let server = CacheTestServer()
        server.state.withLock { $0.extraHeaders = ["Age": "100000000000000000000"] }
        let clock = ManualClock()
        let client = Client(transport: server.transport, middleware: [.caching(cache(clock))])
        _ = try await client.send(get("/items"))
        let revalidated = try await client.send(get("/items"))
        #expect(server.full == 1 && server.notModified == 1)
        #expect(revalidated.1.statusCode == 200)
        #expect(text(revalidated) == "\"v1\" anonymous")
        let age = try #require(revalidated.1.value(forHTTPHeaderField: "Age").flatMap { Int($0) })
        #expect(age >= 1 << 40)
        // So old that max-age=60 never makes it fresh: the next request revalidates again.
        _ = try await client.send(get("/items"))
        #expect(server.notModified == 2)
    }
}
