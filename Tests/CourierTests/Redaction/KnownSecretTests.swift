import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A value unlikely to occur anywhere else, so that tests running in parallel on the shared registry do not
/// meet each other's secrets.
private func uniqueSecret(_ tag: String, _ characters: String = "") -> String {
    "\(tag)-\(UUID().uuidString.prefix(13))\(characters)"
}

private func scrubbed(_ registry: SecretRegistry, _ text: String) -> String {
    var text = text
    let result = text.withUTF8 { registry.scrub($0, placeholder: Array("<x>".utf8)) }
    return result.map { String(decoding: $0, as: UTF8.self) } ?? text
}

@Suite("Known secrets")
struct KnownSecretTests {
    @Test("a registered value is removed from free text, URLs, headers, body previews and error descriptions")
    func everywhere() throws {
        let secret = uniqueSecret("known")
        Redaction.registerSecret(secret)
        #expect(Redaction.redactedText("upstream quoted \(secret) back") == "upstream quoted <redacted> back")
        let url = try #require(URL(string: "https://h.example/reset/\(secret)/confirm"))
        #expect(Redaction.redactedURL(url) == "https://h.example/reset/REDACTED/confirm")
        #expect(Redaction.redactedHeaders(["X-Echo": "v=\(secret)"]) == ["X-Echo": "v=<redacted>"])
        #expect(!Redaction.bodyPreview(Data("[\"\(secret)\"]".utf8)).contains(secret))
        let error = CourierError(
            .transport,
            message: "failed for \(secret)",
            request: URLRequest(url: url),
            underlying: NSError(domain: "x", code: 1, userInfo: [NSLocalizedDescriptionKey: "echo: \(secret)"])
        )
        #expect(leaks(of: secret, in: error) == [])
        #expect(error.message == "failed for <redacted>")
    }

    @Test("a registered value is found percent-encoded (once or twice, either hex case), form-encoded and JSON-escaped")
    func encodings() {
        let core = uniqueSecret("enc")
        let secret = "a+/" + core + "+tail/x="
        Redaction.registerSecret(secret)
        let forms = [
            "a%2B%2F\(core)%2Btail%2Fx%3D",
            "a%2b%2f\(core)%2btail%2fx%3d",
            "a%252B%252F\(core)%252Btail%252Fx%253D",
            "a+\\/\(core)+tail\\/x=",
            "a+/\(core)%2Btail%2Fx%3D",
        ]
        for form in forms {
            let redacted = Redaction.redactedText("before \(form) after")
            #expect(redacted == "before <redacted> after", "\(form)")
        }
        let phrase = uniqueSecret("pass phrase with spaces")
        Redaction.registerSecret(phrase)
        let formEncoded = phrase.replacingOccurrences(of: " ", with: "+")
        #expect(Redaction.redactedText("passphrase=\(formEncoded)&x=1").contains(formEncoded) == false)
        #expect(Redaction.redactedText("note: \(formEncoded).") == "note: <redacted>.")
    }

    @Test("values shorter than the minimum length are ignored; the minimum is 8 bytes")
    func minimumLength() {
        #expect(Redaction.minimumSecretLength == 8)
        Redaction.registerSecret("s7bytes")
        #expect(Redaction.redactedText("ports s7bytes and 8080") == "ports s7bytes and 8080")
        let registry = SecretRegistry(capacity: 4)
        registry.register("1234567")
        #expect(registry.count == 0)
        registry.register("12345678")
        #expect(registry.count == 1)
        #expect(scrubbed(registry, "id 12345678.") == "id <x>.")
    }

    @Test("the most recent values are kept, the oldest dropped, and re-registering makes a value recent")
    func bounded() {
        let registry = SecretRegistry(capacity: 4)
        let values = (0..<6).map { "secret-value-\($0)" }
        for value in values.prefix(4) { registry.register(value) }
        #expect(registry.count == 4)
        registry.register(values[0])  // recent again
        registry.register(values[4])  // drops values[1], the oldest
        #expect(registry.count == 4)
        #expect(scrubbed(registry, values[0]) == "<x>")
        #expect(scrubbed(registry, values[1]) == values[1])
        #expect(scrubbed(registry, values[4]) == "<x>")
        registry.register(values[5])  // drops values[2]
        #expect(scrubbed(registry, values[2]) == values[2])
        #expect(scrubbed(registry, [values[0], values[3], values[5]].joined(separator: " ")) == "<x> <x> <x>")
        #expect(Redaction.maximumRegisteredSecrets == 1024)
    }

    @Test("many secrets sharing a long prefix are told apart, and the longest match wins")
    func sharedPrefixes() {
        let registry = SecretRegistry(capacity: 2048)
        let header = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9."
        var generator = SplitMix64(seed: 7)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        let tokens = (0..<1500).map { _ in
            header + String((0..<30).map { _ in alphabet.randomElement(using: &generator)! })
        }
        for token in tokens { registry.register(token) }
        for token in tokens.shuffled(using: &generator).prefix(200) {
            #expect(scrubbed(registry, "jwt=\(token);") == "jwt=<x>;")
        }
        // A token with the same header that was never registered stays.
        let stranger = header + "not-registered-at-all-0123456789"
        #expect(scrubbed(registry, stranger) == stranger)
        // A value that is a prefix of another: the longer one is removed whole.
        registry.register("prefix-value")
        registry.register("prefix-value-longer")
        #expect(scrubbed(registry, "prefix-value-longer prefix-value!") == "<x> <x>!")
    }

    @Test("two registered values that overlap in the text are removed together: no tail of the second is left")
    func overlapping() {
        let registry = SecretRegistry(capacity: 8)
        registry.register("alpha-secret-1234")
        registry.register("1234-beta-secret-tail")
        // The second starts inside the first and runs past it.
        #expect(scrubbed(registry, "[alpha-secret-1234-beta-secret-tail]") == "[<x>]")
        // Three in a chain, and one that starts inside but ends within the first (covered already).
        registry.register("tail-and-gamma-secret")
        registry.register("secret-12")
        #expect(scrubbed(registry, "x alpha-secret-1234-beta-secret-tail-and-gamma-secret y") == "x <x> y")
        #expect(scrubbed(registry, "alpha-secret-1234 and 1234-beta-secret-tail") == "<x> and <x>")
    }

    @Test("a value longer than the maximum length is matched by its first 16 KiB")
    func longValue() {
        let secret = uniqueSecret("long") + String(repeating: "z", count: Redaction.maximumSecretLength)
        Redaction.registerSecret(secret)
        let redacted = Redaction.redactedText("[\(secret)]")
        #expect(redacted.hasPrefix("[<redacted>"))
        #expect(redacted.utf8.count < secret.utf8.count)
    }

    @Test("registering and scrubbing from many tasks at once is safe", .timeLimit(.minutes(1)))
    func concurrent() async {
        // Room for every value: each task's value is found right after it registered it.
        let roomy = SecretRegistry(capacity: 4096)
        let allFound = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var found = true
                    for round in 0..<200 {
                        let value = "task-\(task)-round-\(round)"
                        roomy.register(value)
                        found = found && scrubbed(roomy, "x \(value) y") == "x <x> y"
                    }
                    return found
                }
            }
            return await group.allSatisfy { $0 }
        }
        #expect(allFound)
        #expect(roomy.count == 16 * 200)

        // Tight: values are dropped while others scan; a value every task keeps using is never dropped.
        let tight = SecretRegistry(capacity: 64)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for round in 0..<200 {
                        tight.register("task-\(task)-round-\(round)")
                        tight.register("shared-secret-value")
                        _ = scrubbed(tight, "task-\(task)-round-\(round / 2) shared-secret-value")
                    }
                }
            }
        }
        #expect(tight.count == 64)
        #expect(scrubbed(tight, "shared-secret-value") == "<x>")
    }

    @Test("with nothing registered, text is returned as it is")
    func empty() {
        let registry = SecretRegistry(capacity: 8)
        var text = "nothing to see here at all"
        #expect(text.withUTF8 { registry.scrub($0, placeholder: []) } == nil)
    }
}
