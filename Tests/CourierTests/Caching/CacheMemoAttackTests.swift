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

    @Test("a hit on a URL with user info leaves no credential in the store: the entry keeps none beside it")
    func userInfoNotKeptBesideTheEntry() async throws {
        let store = InMemoryHTTPCacheStore()
        let transport = MockTransport(.status(200, body: "ok", headers: ["Cache-Control": "public, max-age=60"]))
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(store: store, clock: ManualClock()))])
        let url = try #require(URL(string: "https://ada:pw-SECRET-1@api.example.test/report"))
        _ = try await client.send(URLRequest(url: url))
        #expect(!dumped(store.allResponses).contains("pw-SECRET-1"), "nothing kept before a hit")

        let hit = try await client.send(URLRequest(url: url))
        #expect(transport.callCount == 1, "served from the cache")
        #expect(hit.1.url == url, "the caller still gets the URL it asked for")
        let entries = store.allResponses
        #expect(entries.count == 1)
        #expect(!dumped(entries).isEmpty)
        #expect(!dumped(entries).contains("pw-SECRET-1"), "the password stays in the store's entry after the hit")
    }
}
