import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private func unique(_ tag: String) -> String {
    "\(tag)-\(UUID().uuidString.prefix(13))"
}

private func isFound(_ value: String, in registry: SecretRegistry) -> Bool {
    var text = "said \(value) back"
    return text.withUTF8 { registry.scrub($0, placeholder: Array("<x>".utf8)) } != nil
}

/// `Redaction.pinSecret(_:)`'s example in its documentation, verbatim.
func partnerKey(_ key: String) -> Middleware {
    let secret = Redaction.pinSecret(key)
    return Middleware(name: "partnerKey") { request, next in
        var request = request
        request.setValue(secret.value, forHTTPHeaderField: "X-Partner-Key")
        return try await next(request)
    }
}

/// The secrets Courier holds stay registered while held: no number of other registrations pushes them out.
@Suite("Pinned secrets")
struct SecretPinTests {
    @Test(
        "a pinned value outlives any number of newer values, takes no ordinary value's place, and is dropped in turn once released"
    )
    func pinnedOutlivesNewerValues() {
        let registry = SecretRegistry(capacity: 4)
        registry.register("ordinary-0")
        registry.register("ordinary-1")
        var pin: SecretPin? = SecretPin("held-token-value", registry: registry)
        // Pinning took no ordinary value's place.
        #expect(isFound("ordinary-0", in: registry))
        #expect(registry.count == 3)
        for index in 0..<50 { registry.register("later-value-\(index)") }
        #expect(isFound("held-token-value", in: registry))
        #expect(registry.count == 5)
        #expect(registry.pinCount(of: "held-token-value") == 1)

        // Released, it is an ordinary registration, the most recent one: dropped after `capacity` newer ones.
        withExtendedLifetime(pin) {}
        pin = nil
        #expect(registry.pinCount(of: "held-token-value") == 0)
        #expect(registry.count == 4)
        #expect(isFound("held-token-value", in: registry))
        for index in 0..<3 { registry.register("newer-value-\(index)") }
        #expect(isFound("held-token-value", in: registry))
        registry.register("newer-value-3")
        #expect(!isFound("held-token-value", in: registry))
        #expect(registry.count == 4)
    }

    @Test("pins are counted: a value stays pinned until its last pin is released, and registering it does not unpin it")
    func pinsAreCounted() {
        let registry = SecretRegistry(capacity: 2)
        var first: SecretPin? = SecretPin("shared-token-1", registry: registry)
        var second: SecretPin? = SecretPin("shared-token-1", registry: registry)
        registry.register("shared-token-1")
        #expect(registry.pinCount(of: "shared-token-1") == 2)
        withExtendedLifetime(first) {}
        first = nil
        for index in 0..<10 { registry.register("other-value-\(index)") }
        #expect(isFound("shared-token-1", in: registry))
        #expect(registry.pinCount(of: "shared-token-1") == 1)
        withExtendedLifetime(second) {}
        second = nil
        #expect(registry.pinCount(of: "shared-token-1") == 0)
        for index in 10..<12 { registry.register("other-value-\(index)") }
        #expect(!isFound("shared-token-1", in: registry))
    }

    @Test("a value too short to register is not pinned, and releasing it changes nothing")
    func shortValue() {
        let registry = SecretRegistry(capacity: 2)
        var pin: SecretPin? = SecretPin("short", registry: registry)
        #expect(registry.count == 0)
        withExtendedLifetime(pin) {}
        pin = nil
        #expect(registry.count == 0)
    }

    @Test("held secrets: holding new values releases the old ones, and holding the same values again changes nothing")
    func heldSecretsReplace() {
        let registry = SecretRegistry(capacity: 2)
        let held = HeldSecrets(registry: registry)
        held.hold("access-token-1", "refresh-token-1")
        #expect(registry.pinCount(of: "access-token-1") == 1)
        #expect(registry.pinCount(of: "refresh-token-1") == 1)
        held.hold("access-token-1", "refresh-token-1")
        #expect(registry.pinCount(of: "access-token-1") == 1)
        held.hold("access-token-2")
        #expect(held.values == ["access-token-2"])
        #expect(registry.pinCount(of: "access-token-1") == 0)
        #expect(registry.pinCount(of: "refresh-token-1") == 0)
        #expect(registry.pinCount(of: "access-token-2") == 1)
        // Byte for byte: a canonically equivalent value is another secret.
        held.hold("caf\u{E9}-token-value")
        held.hold("cafe\u{301}-token-value")
        #expect(registry.pinCount(of: "caf\u{E9}-token-value") == 0)
        #expect(registry.pinCount(of: "cafe\u{301}-token-value") == 1)
        // By version: an older one arriving late (two holders racing outside their locks) changes nothing.
        let versioned = HeldSecrets(registry: registry)
        versioned.hold("version-two-token", version: 2)
        versioned.hold("version-one-token", version: 1)
        #expect(versioned.values == ["version-two-token"])
        #expect(registry.pinCount(of: "version-one-token") == 0)
    }

    @Test("a fixed token and a headers middleware's credentials are pinned while the middleware exists")
    func middlewarePinsItsCredentials() {
        let token = unique("fixed-token")
        let key = unique("api-key")
        let plain = unique("plain-value")
        do {
            let middleware = [
                Middleware.authenticating(token: token),
                .headers(["X-API-Key": key, "X-Trace": plain]),
            ]
            #expect(SecretRegistry.shared.pinCount(of: token) == 1)
            #expect(SecretRegistry.shared.pinCount(of: key) == 1)
            #expect(SecretRegistry.shared.pinCount(of: plain) == 0)
            withExtendedLifetime(middleware) {}
        }
        #expect(SecretRegistry.shared.pinCount(of: token) == 0)
        #expect(SecretRegistry.shared.pinCount(of: key) == 0)
    }

    @Test(
        "a token provider's 16 latest distinct tokens are pinned: alternating tenants keep theirs, the 17th releases the least recent"
    )
    func providerPinsItsRecentTokens() async throws {
        let tokens = (0..<17).map { _ in unique("provided-token") }
        let next = Locked(0)
        let transport = MockTransport.ok
        let client = makeClient(transport, [.authenticating { tokens[next.withLock { $0 }] }])
        for index in 0..<16 {
            next.withLock { $0 = index }
            _ = try await client.send(URLRequest(url: testURL))
        }
        #expect(tokens.prefix(16).allSatisfy { SecretRegistry.shared.pinCount(of: $0) == 1 })
        // The first again: most recent now, still pinned once.
        next.withLock { $0 = 0 }
        _ = try await client.send(URLRequest(url: testURL))
        #expect(SecretRegistry.shared.pinCount(of: tokens[0]) == 1)
        // A 17th releases the least recent, the second.
        next.withLock { $0 = 16 }
        _ = try await client.send(URLRequest(url: testURL))
        #expect(SecretRegistry.shared.pinCount(of: tokens[16]) == 1)
        #expect(SecretRegistry.shared.pinCount(of: tokens[1]) == 0)
        #expect(SecretRegistry.shared.pinCount(of: tokens[0]) == 1)
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") }.last == "Bearer \(tokens[16])")
    }

    @Test("a refresher's current token and refresh token are pinned; a token it replaced is released")
    func refresherPinsItsCurrentToken() async throws {
        let first = TokenRefresher.Token(unique("access"), refreshToken: unique("refresh"))
        let second = TokenRefresher.Token(unique("access"), refreshToken: unique("refresh"))
        let refresher = TokenRefresher(token: first) { _ in second }
        #expect(SecretRegistry.shared.pinCount(of: first.value) == 1)
        #expect(SecretRegistry.shared.pinCount(of: first.refreshToken!) == 1)
        _ = try await refresher.refresh()
        #expect(SecretRegistry.shared.pinCount(of: first.value) == 0)
        #expect(SecretRegistry.shared.pinCount(of: first.refreshToken!) == 0)
        #expect(SecretRegistry.shared.pinCount(of: second.value) == 1)
        #expect(SecretRegistry.shared.pinCount(of: second.refreshToken!) == 1)
        let third = TokenRefresher.Token(unique("access"))
        await refresher.setToken(third)
        #expect(SecretRegistry.shared.pinCount(of: second.value) == 0)
        #expect(SecretRegistry.shared.pinCount(of: third.value) == 1)
    }

    @Test("an in-memory shared token store pins the token it stores")
    func sharedStorePinsItsToken() async {
        let first = SharedToken(unique("shared"), version: 1)
        let store = InMemorySharedTokenStore(token: first)
        #expect(SecretRegistry.shared.pinCount(of: first.value) == 1)
        let stored = await store.replaceToken(SharedToken(unique("shared"), version: 0))
        #expect(SecretRegistry.shared.pinCount(of: first.value) == 0)
        #expect(SecretRegistry.shared.pinCount(of: stored.value) == 1)
    }

    @Test(
        "seeded model: registrations, pins and releases in random order; the registry finds what the model keeps",
        arguments: 0..<20
    )
    func model(seed: UInt64) {
        var random = SplitMix64(seed: 0x5EC2E7 &+ seed)
        let capacity = 4
        let registry = SecretRegistry(capacity: capacity)
        let pool = (0..<12).map { "pool-value-\($0)-end" }
        // The model: ordinary values, most recent last, with the registration count that made each recent;
        // pinned values with their pin counts.
        var recent: [String] = []
        var stamps: [String: Int] = [:]
        var registrations = 0
        var pinCounts: [String: Int] = [:]
        var pins: [SecretPin] = []
        func makeRecent(_ value: String) {
            registrations += 1
            stamps[value] = registrations
            recent.removeAll { $0 == value }
            recent.append(value)
            if recent.count > capacity { recent.removeFirst() }
        }
        for _ in 0..<300 {
            let value = pool[Int(random.next() % UInt64(pool.count))]
            switch random.next() % 3 {
            case 0:
                registry.register(value)
                // A pinned value, or one made recent within the last `capacity / 2` registrations, is left as it is.
                let isRecent = recent.contains(value) && registrations - stamps[value, default: 0] < capacity / 2
                if pinCounts[value, default: 0] == 0 && !isRecent { makeRecent(value) }
            case 1:
                pins.append(SecretPin(value, registry: registry))
                if pinCounts[value, default: 0] == 0 {
                    if !recent.contains(value) { registrations += 1 }
                    recent.removeAll { $0 == value }
                }
                pinCounts[value, default: 0] += 1
            default:
                guard !pins.isEmpty else { continue }
                let released = pins.remove(at: Int(random.next() % UInt64(pins.count))).value
                pinCounts[released]! -= 1
                if pinCounts[released] == 0 { makeRecent(released) }
            }
            for candidate in pool {
                let kept = pinCounts[candidate, default: 0] > 0 || recent.contains(candidate)
                #expect(isFound(candidate, in: registry) == kept, "seed \(seed): \(candidate)")
                #expect(registry.pinCount(of: candidate) == pinCounts[candidate, default: 0])
            }
            #expect(registry.count == recent.count + pinCounts.values.filter { $0 > 0 }.count)
        }
    }

    @Test("pinSecret keeps a value registered while the middleware that keeps it exists, and never prints it")
    func pinSecretInYourOwnMiddleware() async throws {
        let key = unique("partner-key")
        let transport = MockTransport.ok
        do {
            let client = makeClient(transport, [partnerKey(key)])
            _ = try await client.send(URLRequest(url: testURL))
            #expect(transport.requests.first?.value(forHTTPHeaderField: "X-Partner-Key") == key)
            #expect(SecretRegistry.shared.pinCount(of: key) == 1)
            #expect(Redaction.redactedText("upstream said \(key)") == "upstream said <redacted>")
            await client.shutdown()
        }
        #expect(SecretRegistry.shared.pinCount(of: key) == 0)
        let secret = Redaction.pinSecret(key)
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!"\(secret) \(String(reflecting: secret)) \(dumped)".contains(key))
        #expect(secret.value == key)
    }
}
