import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bytes a server or a caller controls, compared or keyed as Swift `String`s: `String`'s `==` and hashing are
/// Unicode canonical equivalence (`"\u{2126}"`, the Ohm sign, is `"\u{3A9}"`, Greek capital omega; `"\u{212A}"`,
/// the Kelvin sign, is `"K"`; `"e\u{301}"` is `"\u{E9}"`), and `lowercased()` is Unicode's (the Kelvin sign
/// becomes ASCII `"k"`). HTTP compares these bytes as bytes (values) or without the case of ASCII letters
/// (names): two values a server tells apart must not be one key here. Every comparison of what came back below
/// is of bytes, never of `String`s, for the same reason.
@Suite("String equivalence (canonical equivalence, Unicode case) where HTTP compares bytes")
struct StringEquivalenceAttackTests {
    /// Two tenants a server tells apart: `Ωmega` spelled with the Ohm sign and with Greek capital omega.
    private static let ohmTenant = "\u{2126}mega"
    private static let omegaTenant = "\u{3A9}mega"

    private static let url = URL(string: "https://api.example.test/report")!

    private static func request(_ headers: [String: String]) -> URLRequest {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private static func bytes(_ data: Data) -> [UInt8] { Array(data) }
    private static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(
        "the preconditions: the two tenants, and the two spellings of a secret, differ in bytes and are equal as Strings"
    )
    func preconditions() {
        #expect(Self.bytes(Self.ohmTenant) != Self.bytes(Self.omegaTenant))
        #expect(Self.ohmTenant == Self.omegaTenant)
        #expect("caf\u{E9}".utf8.count != "cafe\u{301}".utf8.count)
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect("X-\u{212A}".lowercased() == "x-k")
    }

    // MARK: Coalescing

    @Test(
        "coalescing: requests whose X-Tenant values differ in bytes are sent separately, each tenant gets its own response"
    )
    func coalescingKeepsTenantsApart() async throws {
        let coalescer = RequestCoalescer()
        let held = HoldingTransport(
            wrapping: MockTransport { request in .status(200, body: request.header("X-Tenant") ?? "none") }
        )
        let client = Client(transport: held, middleware: [.coalescing(coalescer)])
        let omegaRequest = Self.request(["X-Tenant": Self.omegaTenant])
        let ohmRequest = Self.request(["X-Tenant": Self.ohmTenant])

        #expect(coalescer.key(for: omegaRequest) != coalescer.key(for: ohmRequest))

        let omega = Task { try await client.send(omegaRequest) }
        await held.waitUntilHolding(1)
        let ohm = Task { try await client.send(ohmRequest) }
        try await waitUntil { coalescer.waitingCallers == 2 }
        let calls = coalescer.sharedCalls
        held.open()
        let omegaBody = try await omega.join().0
        let ohmBody = try await ohm.join().0

        #expect(calls == 2, "the Ohm tenant joined the Greek tenant's call")
        #expect(held.requests.count == 2)
        #expect(Self.bytes(omegaBody) == Self.bytes(Self.omegaTenant))
        #expect(
            Self.bytes(ohmBody) == Self.bytes(Self.ohmTenant),
            "the Ohm tenant was given the Greek tenant's response"
        )
    }

    // MARK: Caching

    @Test("caching: a response that varies on X-Tenant is not served to a tenant whose value differs in bytes")
    func cacheVaryKeepsTenantsApart() async throws {
        let transport = MockTransport { request in
            .status(
                200,
                body: request.header("X-Tenant") ?? "none",
                headers: ["Cache-Control": "max-age=60", "Vary": "X-Tenant"]
            )
        }
        let cache = HTTPCache(clock: ManualClock())
        let client = Client(transport: transport, middleware: [.caching(cache)])

        let omega = try await client.send(Self.request(["X-Tenant": Self.omegaTenant]))
        let ohm = try await client.send(Self.request(["X-Tenant": Self.ohmTenant]))

        #expect(Self.bytes(omega.0) == Self.bytes(Self.omegaTenant))
        #expect(transport.callCount == 2, "the second tenant was answered from the first one's stored response")
        #expect(Self.bytes(ohm.0) == Self.bytes(Self.ohmTenant), "the Ohm tenant was given the Greek tenant's response")
    }

    @Test(
        "caching: a Vary list splits on its ASCII commas and trims only spaces and tabs",
        arguments: [
            // A combining mark after the comma: as Characters, `,\u{301}` is one and no separator, X-Tenant was never
            // read, and every tenant had the same variant.
            ("X-Tenant,\u{301}Accept", "acme", "globex"),
            // Values that differ only by a no-break space (not HTTP's whitespace) are two tenants to the server.
            ("X-Tenant", "acme", "acme\u{A0}"),
            ("X-Tenant", "acme", "\u{2003}acme"),
        ]
    )
    func varyListIsBytes(vary: String, first: String, second: String) async throws {
        let transport = MockTransport { request in
            .status(
                200,
                body: request.header("X-Tenant") ?? "none",
                headers: ["Cache-Control": "max-age=60", "Vary": vary]
            )
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        let one = try await client.send(Self.request(["X-Tenant": first]))
        let two = try await client.send(Self.request(["X-Tenant": second]))
        #expect(Self.bytes(one.0) == Self.bytes(first))
        #expect(transport.callCount == 2, "the second tenant was answered from the first one's stored response")
        #expect(Self.bytes(two.0) == Self.bytes(second), "a tenant was given another's response")
    }

    @Test("caching: the Vary match of a stored response compares the request's header bytes")
    func varyMatchComparesBytes() throws {
        let stored = CachedResponse(
            statusCode: 200,
            headers: ["Cache-Control": "max-age=60", "Vary": "X-Tenant"],
            body: Data(),
            requestDate: Date(timeIntervalSince1970: 0),
            responseDate: Date(timeIntervalSince1970: 0),
            variant: try #require(
                HTTPCachePolicy.variant(of: Self.request(["X-Tenant": Self.omegaTenant]), vary: "X-Tenant")
            )
        )
        #expect(HTTPCachePolicy.matches(stored, Self.request(["X-Tenant": Self.omegaTenant])))
        #expect(!HTTPCachePolicy.matches(stored, Self.request(["X-Tenant": Self.ohmTenant])))
    }

    @Test("caching: credentials that differ in bytes never share a partition (without a partition secret too)")
    func credentialIdentityComparesBytes() async throws {
        let identity = CredentialIdentity()
        let nfc = Self.request(["Authorization": "Bearer caf\u{E9}-0123456789"])
        let nfd = Self.request(["Authorization": "Bearer cafe\u{301}-0123456789"])
        #expect(identity.identity(of: nfc) != identity.identity(of: nfd))

        // The consequence: a response stored for one credential answers the other, which the server never saw.
        let transport = MockTransport { request in
            .status(
                200,
                body: request.header("Authorization") ?? "anonymous",
                headers: ["Cache-Control": "public, max-age=60"]
            )
        }
        let client = Client(transport: transport, middleware: [.caching(HTTPCache(clock: ManualClock()))])
        _ = try await client.send(nfc)
        let second = try await client.send(nfd)
        #expect(transport.callCount == 2, "the second credential was answered from the first one's partition")
        #expect(Self.bytes(second.0) == Self.bytes("Bearer cafe\u{301}-0123456789"))
    }

    // MARK: Redaction

    @Test("redaction: a registered secret is redacted even when a canonically equivalent one was registered before it")
    func secretRegistryKeepsEquivalentSecrets() throws {
        let registry = SecretRegistry(capacity: 16)
        let suffix = UUID().uuidString
        let nfc = "caf\u{E9}-secret-\(suffix)"
        let nfd = "cafe\u{301}-secret-\(suffix)"
        registry.register(nfc)
        registry.register(nfd)
        let placeholder = Array("<redacted>".utf8)
        var text = "token=\(nfd) end"
        let scrubbed = text.withUTF8 { registry.scrub($0, placeholder: placeholder) }
        #expect(scrubbed == Array("token=<redacted> end".utf8), "the second secret was printed in clear")
    }

    @Test("redaction: Redaction.redactedText hides the second of two canonically equivalent registered secrets")
    func redactionHidesEquivalentSecrets() {
        let suffix = UUID().uuidString
        let nfc = "p\u{E4}sswort-\(suffix)"
        let nfd = "pa\u{308}sswort-\(suffix)"
        Redaction.registerSecret(nfc)
        Redaction.registerSecret(nfd)
        let redacted = Redaction.redactedText("first \(nfc) second \(nfd)")
        #expect(!redacted.utf8.contains(subsequence: Array(nfd.utf8)), "\(redacted.debugDescription)")
        #expect(!redacted.utf8.contains(subsequence: Array(nfc.utf8)))
    }

    // MARK: Logging

    @Test("logging: metadata keeps the value of every response header, whose names Unicode lowercases alike or not")
    func logMetadataKeepsEveryHeader() {
        // What HeaderFieldJoining hands on for a head with `X-\u{212A}` and `x-k`: two names, as neither compares
        // equal to the other as bytes without ASCII case, nor as Strings.
        let headers = HeaderFieldJoining.joined(
            [(name: "X-\u{212A}", value: "kelvin"), (name: "x-k", value: "ascii")],
            count: 2,
            style: .response
        )
        #expect(headers.count == 2)
        let record = LogRecord(
            level: .info,
            event: .completed,
            method: "GET",
            url: "https://api.example.test/",
            statusCode: 200,
            responseHeaders: headers
        )
        let values = Set(
            record.metadata.filter { $0.key.hasPrefix("http.response.header.") }.values.map { Array($0.utf8) }
        )
        #expect(values == [Array("kelvin".utf8), Array("ascii".utf8)], "one header's value replaced the other's")
    }

    // MARK: Rate limiting

    @Test("rate limiting: partitions (tenant keys) that differ in bytes do not share a quota")
    func rateLimitPartitionsCompareBytes() async throws {
        let limiter = RateLimiter(
            RateLimitPolicy(
                clientLimit: .init(maxRequests: 1, per: .seconds(60)),
                maximumWait: .seconds(1),
                partition: { $0.value(forHTTPHeaderField: "X-Tenant") ?? "" }
            ),
            clock: ManualClock()
        )
        func lease(_ request: URLRequest) async throws -> RateLimiter.Lease {
            switch limiter.admit(request) {
            case .lease(let atOnce): atOnce
            case .acquire(let partition): try await limiter.acquire(request, partition: partition)
            }
        }
        let omega = try await lease(Self.request(["X-Tenant": Self.omegaTenant]))
        #expect(Self.bytes(omega.partition) == Self.bytes(Self.omegaTenant))
        // The Ohm tenant's first request: its own quota is untouched.
        let ohm = try await lease(Self.request(["X-Tenant": Self.ohmTenant]))
        #expect(Self.bytes(ohm.partition) == Self.bytes(Self.ohmTenant))
    }
}

extension String.UTF8View {
    fileprivate func contains(subsequence: [UInt8]) -> Bool {
        let bytes = Array(self)
        guard !subsequence.isEmpty, bytes.count >= subsequence.count else { return subsequence.isEmpty }
        for start in 0...(bytes.count - subsequence.count)
        where bytes[start..<start + subsequence.count].elementsEqual(subsequence) {
            return true
        }
        return false
    }
}
