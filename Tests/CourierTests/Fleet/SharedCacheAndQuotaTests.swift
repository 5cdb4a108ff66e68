import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("SHA-256 and HMAC-SHA-256 (the cache's keyed partition)")
struct SHA256Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    @Test(
        "FIPS 180-4 test vectors, around the padding's block boundary too",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
        ]
    )
    func vectors(message: String, digest: String) {
        #expect(hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test("A million a's")
    func millionAs() {
        #expect(
            hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        )
    }

    @Test("RFC 4231 HMAC-SHA-256 test cases 1, 2 and 6 (a key longer than a block)")
    func hmac() {
        #expect(
            hex(SHA256.authenticationCode(for: Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        )
        #expect(
            hex(SHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        )
        #expect(
            hex(
                SHA256.authenticationCode(
                    for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                    key: [UInt8](repeating: 0xaa, count: 131)
                )
            ) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        )
    }
}

@Suite("A fleet's shared cache partitions", .timeLimit(.minutes(1)))
struct SharedCachePartitionTests {
    private static let url = URL(string: "https://api.example.test/report")!
    private let secret = HTTPCache.PartitionSecret(Array("a secret the replicas share".utf8))

    private func request(_ token: String?) -> URLRequest {
        var request = URLRequest(url: Self.url)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// An origin whose body names the credential it was sent, cacheable by a private cache for a minute.
    private func origin() -> MockTransport {
        MockTransport { request in
            .status(
                200,
                body: "for \(request.header("Authorization") ?? "nobody")",
                headers: ["Cache-Control": "public, max-age=60"]
            )
        }
    }

    @Test("Replicas with one secret share a credentialed response: one origin fetch for the fleet")
    func replicasShareCredentialedEntries() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = origin()
        let replicas = (0..<3).map { _ in
            Client(
                transport: transport,
                middleware: [.caching(HTTPCache(store: store, clock: ManualClock(), partitionSecret: secret))]
            )
        }
        for replica in replicas {
            let (body, _) = try await replica.send(request("alice"))
            #expect(String(decoding: body, as: UTF8.self) == "for Bearer alice")
        }
        #expect(transport.callCount == 1)
    }

    @Test("Never across credentials: another credential, or none, reaches the origin and gets its own body")
    func neverAcrossCredentials() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = origin()
        let first = Client(
            transport: transport,
            middleware: [.caching(HTTPCache(store: store, clock: ManualClock(), partitionSecret: secret))]
        )
        let second = Client(
            transport: transport,
            middleware: [.caching(HTTPCache(store: store, clock: ManualClock(), partitionSecret: secret))]
        )
        _ = try await first.send(request("alice"))
        let bob = try await second.send(request("bob"))
        let nobody = try await second.send(request(nil))
        #expect(String(decoding: bob.0, as: UTF8.self) == "for Bearer bob")
        #expect(String(decoding: nobody.0, as: UTF8.self) == "for nobody")
        #expect(transport.callCount == 3)
    }

    @Test("Without a secret, or with another one, replicas keep credentialed responses to themselves (as before)")
    func differentSecretsDoNotShare() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = origin()
        let other = HTTPCache.PartitionSecret(Array("another secret, another fleet".utf8))
        for cache in [
            HTTPCache(store: store, clock: ManualClock()), HTTPCache(store: store, clock: ManualClock()),
            HTTPCache(store: store, clock: ManualClock(), partitionSecret: secret),
            HTTPCache(store: store, clock: ManualClock(), partitionSecret: other),
        ] {
            _ = try await Client(transport: transport, middleware: [.caching(cache)]).send(request("alice"))
        }
        #expect(transport.callCount == 4)
    }

    @Test("The partition holds neither the secret nor the credential; the secret's description is redacted")
    func nothingInClear() async throws {
        let store = InMemoryHTTPCacheStore()
        let client = Client(
            transport: origin(),
            middleware: [.caching(HTTPCache(store: store, clock: ManualClock(), partitionSecret: secret))]
        )
        _ = try await client.send(request("alice-token-123"))
        let key = HTTPCacheKey(
            resource: Self.url.absoluteString,
            partition: "GET "
                + CredentialIdentity.keyedIdentity(
                    of: [(name: "authorization", value: "Bearer alice-token-123")],
                    secret: secret.key
                )
        )
        let stored = try await store.responses(for: key)
        #expect(stored.count == 1)
        #expect(!key.partition.contains("alice"))
        #expect(key.partition.count == "GET ".count + 32)
        #expect(!secret.description.contains("secret the replicas"))
        #expect(HTTPCache.PartitionSecret(base64: "c2hvcnQ=") == nil)  // 5 bytes: too short
        #expect(HTTPCache.PartitionSecret(base64: "not base64!") == nil)
    }

    @Test("Length-prefixed fields: moving bytes between a name and a value changes the identity")
    func unambiguousEncoding() {
        let key = Array("0123456789abcdef".utf8)
        let a = CredentialIdentity.keyedIdentity(of: [(name: "x-key", value: "ab")], secret: key)
        let b = CredentialIdentity.keyedIdentity(of: [(name: "x-keya", value: "b")], secret: key)
        let c = CredentialIdentity.keyedIdentity(
            of: [(name: "x-key", value: "a"), (name: "b", value: "")],
            secret: key
        )
        #expect(Set([a, b, c]).count == 3)
    }
}

@Suite("A fleet's shared rate-limit window (RateLimitStore reservations)", .timeLimit(.minutes(1)))
struct SharedQuotaReservationTests {
    private let now = Locked(Date(timeIntervalSince1970: 1_000_000))

    private func store() -> InMemoryRateLimitStore {
        InMemoryRateLimitStore(currentDate: { [now] in now.value })
    }

    @Test("8 replicas taking blocks of 10 at once from a window of 100: exactly 100 granted, never more")
    func blocksNeverOverrunTheWindow() async throws {
        let store = store()
        let granted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var total = 0
                    for _ in 0..<5 {
                        total += await store.reserve(10, in: "api", limit: 100, window: .seconds(2)).granted
                    }
                    return total
                }
            }
            return await group.reduce(0, +)
        }
        #expect(granted == 100)
        #expect(await store.reserve(1, in: "api", limit: 100, window: .seconds(2)).granted == 0)
        #expect(await store.reserve(1, in: "other", limit: 100, window: .seconds(2)).granted == 1)
    }

    @Test("A partial block at the end of the window, slots given back, and a new window after the end")
    func partialReleaseAndNewWindow() async throws {
        let store = store()
        let first = await store.reserve(60, in: "api", limit: 100, window: .seconds(2))
        let second = await store.reserve(60, in: "api", limit: 100, window: .seconds(2))
        #expect(first.granted == 60)
        #expect(second.granted == 40)
        #expect(second.windowEndsAt == first.windowEndsAt)
        await store.release(25, of: first)  // a replica stopped early: 25 of its block unused
        #expect(await store.reserve(30, in: "api", limit: 100, window: .seconds(2)).granted == 25)

        now.withLock { $0 = first.windowEndsAt }
        await store.release(10, of: second)  // its window has ended: nothing to give back
        let next = await store.reserve(30, in: "api", limit: 100, window: .seconds(2))
        #expect(next.granted == 30)
        #expect(next.windowEndsAt == first.windowEndsAt.addingTimeInterval(2))
    }

    @Test("A store without reservations grants every slot: each replica paces alone, as before")
    func defaultGrantsAll() async throws {
        struct ServerNumbersOnly: RateLimitStore {
            func quota(for partition: String) async throws -> RateLimitQuota? { nil }
            func record(_ quota: RateLimitQuota, for partition: String) async throws {}
        }
        let reservation = try await ServerNumbersOnly().reserve(500, in: "api", limit: 100, window: .seconds(2))
        #expect(reservation.granted == 500)
    }
}
