import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Attacks on the memo kept beside each stored response (``CachedResponse/Memo``): what it keeps must not
/// change what the cache promises about the entries it stores.
@Suite("CachedResponse.Memo under attack", .timeLimit(.minutes(1)))
struct CacheMemoAttackTests {
    /// Everything `value` holds, as `dump` shows it (every stored property, private ones included).
    private func dumped(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }

    @Test(
        "a hit leaves no secret of the request's URL in the store: neither its user info nor a token in its fragment",
        arguments: [
            ("https://ada:pw-SECRET-1@api.example.test/report", "pw-SECRET-1"),
            ("https://api.example.test/report#access_token=tok-SECRET-2", "tok-SECRET-2"),
        ]
    )
    func urlSecretsNotKeptBesideTheEntry(address: String, secret: String) async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport(.status(200, body: "ok", headers: ["Cache-Control": "public, max-age=60"]))
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        let url = try #require(URL(string: address))
        _ = try await client.send(URLRequest(url: url))
        #expect(!dumped(store.allResponses).contains(secret), "nothing kept before a hit")

        let hit = try await client.send(URLRequest(url: url))
        #expect(transport.callCount == 1, "served from the cache")
        #expect(hit.1.url == url, "the caller still gets the URL it asked for")
        let entries = store.allResponses
        #expect(entries.count == 1)
        #expect(!dumped(entries).isEmpty)
        #expect(!dumped(entries).contains(secret), "the secret stays in the store's entry after the hit")
    }
}
