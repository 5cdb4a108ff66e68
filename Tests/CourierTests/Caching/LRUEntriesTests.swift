import Foundation
import Testing

@testable import Courier

@Suite("InMemoryHTTPCacheStore's LRU entries (synchronous)")
struct LRUEntriesTests {
    private func response(_ bytes: Int, variant: String = "") -> CachedResponse {
        CachedResponse(
            statusCode: 200,
            headers: [:],
            body: Data(repeating: 0, count: bytes),
            requestDate: .distantPast,
            responseDate: .distantPast,
            variant: variant
        )
    }

    private func key(_ path: String, _ partition: String = "GET") -> HTTPCacheKey {
        HTTPCacheKey(resource: "https://a.test/" + path, partition: partition)
    }

    @Test("past the entry limit the least recently used goes; a read counts as a use")
    func evictsByCount() {
        var entries = LRUEntries(maximumCount: 2, maximumSize: 1_000)
        entries.store(response(1), for: key("a"))
        entries.store(response(1), for: key("b"))
        #expect(entries.responses(for: key("a")).count == 1)
        let evicted = entries.store(response(1), for: key("c"))
        #expect(evicted.map(\.key) == [key("b")])
        #expect(entries.order.map(\.key) == [key("c"), key("a")])
        #expect(entries.responses(for: key("b")).isEmpty)
    }

    @Test("two variants that differ in bytes but are equal as Strings are two entries, neither replacing the other")
    func variantsCompareBytes() {
        var entries = LRUEntries(maximumCount: 10, maximumSize: 1_000)
        // X-Tenant values with the Ohm sign and with Greek capital omega: two tenants to the server.
        let ohm = "x-tenant:\u{2126}mega"
        let omega = "x-tenant:\u{3A9}mega"
        #expect(ohm == omega)
        entries.store(response(1, variant: ohm), for: key("a"))
        entries.store(response(2, variant: omega), for: key("a"))
        #expect(entries.count == 2)
        let variants = entries.responses(for: key("a")).map { Array($0.variant.utf8) }.sorted { $0.count < $1.count }
        #expect(variants == [Array(omega.utf8), Array(ohm.utf8)])
        entries.removeAll(forResource: key("a").resource)
        #expect(entries.count == 0)
        #expect(entries.size == 0)
    }

    @Test("past the byte limit the oldest go until the total fits; a response larger than the limit is not kept")
    func evictsBySize() {
        var entries = LRUEntries(maximumCount: 10, maximumSize: 100)
        entries.store(response(40), for: key("a"))
        entries.store(response(40), for: key("b"))
        entries.store(response(50), for: key("c"))
        #expect(entries.order.map(\.key) == [key("c"), key("b")])
        #expect(entries.size == 90)
        entries.store(response(101), for: key("d"))
        #expect(entries.count == 2 && entries.size == 90)
    }

    @Test("one response per key and variant: storing again replaces; other variants stay")
    func replacesVariant() {
        var entries = LRUEntries(maximumCount: 10, maximumSize: 1_000)
        entries.store(response(1, variant: "accept:a"), for: key("x"))
        entries.store(response(2, variant: "accept:b"), for: key("x"))
        entries.store(response(3, variant: "accept:a"), for: key("x"))
        #expect(entries.count == 2)
        #expect(entries.size == 2 + 3 + 16)
        #expect(Set(entries.responses(for: key("x")).map(\.body.count)) == [2, 3])
    }

    @Test("removing a resource removes it under every partition and no other resource")
    func removesResource() {
        var entries = LRUEntries(maximumCount: 10, maximumSize: 1_000)
        entries.store(response(1), for: key("x", "GET"))
        entries.store(response(1), for: key("x", "GET 0123"))
        entries.store(response(1), for: key("x", "HEAD"))
        entries.store(response(1), for: key("y"))
        entries.removeAll(forResource: "https://a.test/x")
        #expect(entries.order.map(\.key) == [key("y")])
        #expect(entries.size == 1)
    }
}
