import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The fixed field an authenticating layer sets writes the request's fields itself on Linux; it must leave exactly
/// the fields `URLRequest.setValue(_:forHTTPHeaderField:)` leaves, which is what it replaces.
@Suite("A fixed header field, set as setValue sets it")
struct FixedHeaderFieldTests {
    /// Names a request may already have: spellings of the names set, others, and some that are not ASCII.
    private static let names = [
        "Authorization", "authorization", "AUTHORIZATION", "aUtHoRiZaTiOn", "X-API-Key", "x-api-key", "X-Api-Key",
        "Accept", "accept", "Cookie", "X-Request-ID", "Content-Type", "Authorizatio", "Authorization2", "Äuthorization",
        "X-Ápi-Key", "X-API-\u{212A}ey", "",
    ]
    private static let values = ["", "1", "application/json", "Bearer old", "a b", "é", "a\tb"]
    /// The fields set: the name as a scheme spells it, and a value a credential has.
    private static let fields = [
        ("Authorization", "Bearer tok"), ("authorization", "Token abc"), ("X-API-Key", "k3y"), ("x-api-key", "k"),
        ("X-Custom-Auth", "SSWS x.y"), ("Authorization", "Bearer é"),
    ]

    @Test("the fields it leaves are setValue's, whatever the request has", arguments: 0..<4)
    func sameAsSetValue(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 2)
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var written = 0
        for _ in 0..<400 {
            let (name, value) = pick(Self.fields)
            var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
            var fields: [String: String] = [:]
            for _ in 0..<Int(random.next() % 6) { fields[pick(Self.names)] = pick(Self.values) }
            if !fields.isEmpty || random.next() % 2 == 0 { request.allHTTPHeaderFields = fields }
            var expected = request
            expected.setValue(value, forHTTPHeaderField: name)
            var actual = request
            let field = FixedHeaderField(name: name, value: value)
            field.set(on: &actual)
            #expect(actual.allHTTPHeaderFields == expected.allHTTPHeaderFields, "\(name) over \(fields)")
            #expect(actual == expected)
            if field.writesFields(for: request) { written += 1 }
        }
        #if canImport(FoundationNetworking)
        // Both paths were taken many times.
        #expect(written > 100)
        #expect(written < 350)
        #endif
    }
}
