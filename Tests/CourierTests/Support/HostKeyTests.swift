import CourierTesting
import Foundation
import Testing

@testable import Courier

@Suite("HostKey")
struct HostKeyTests {
    @Test(
        "plain URLs are keyed from their text; anything else by Foundation",
        arguments: [
            ("http://127.0.0.1:8080/users/42", "127.0.0.1:8080", true),
            ("https://API.Example.com/items?page=2#top", "api.example.com:443", true),
            ("HTTP://host", "host:80", true),
            ("ws://host?x", "host:80", true),
            ("WSS://host#f", "host:443", true),
            ("ftp://files.example.com/", "files.example.com:0", true),
            ("https://example.com:65535", "example.com:65535", true),
            ("http://user:secret@Example.com:81/", "example.com:81", false),
            ("http://[::1]:8080/", "::1:8080", false),
            ("http://ex%41mple.com/", "exAmple.com:80", false),
            ("http://host:080/", "host:80", false),
            ("mailto:someone@example.com", "", false),
            ("/relative/path", "", false),
        ]
    )
    func examples(text: String, key: String, plain: Bool) throws {
        let url = try #require(URL(string: text))
        #expect(HostKey.of(url) == HostKey.foundationKey(url))
        #expect(HostKey.of(url).lowercased() == key.lowercased())
        #expect((HostKey.plainKey(url.absoluteString) != nil) == plain)
    }

    @Test("a URL without one is keyed \"\"")
    func noURL() {
        #expect(HostKey.of(nil) == "")
    }

    /// Pieces of URL text, common and odd: the key read from the text must equal Foundation's for every URL
    /// Foundation accepts.
    private static let schemes = [
        "http", "https", "HTTP", "hTtPs", "ws", "wss", "WsS", "ftp", "x+y.z-1", "h2", "1http",
    ]
    private static let separators = ["://", "://", "://", "://", ":/", ":", "//"]
    private static let userInfos = ["", "", "", "", "", "", "user@", "user:pw@", "@", ":@"]
    private static let oddHostParts = ["_", "%41", "%2e", "~", "[::1]", "[v1.x]", "é", " ", "!", "+", "@", ":"]
    private static let ports = [
        "", "", "", "", ":", ":0", ":00", ":08", ":80", ":443", ":8080", ":65535", ":65536", ":99999", ":123456",
        ":8a", ":-1",
    ]
    private static let tails = ["", "", "/", "/a/b", "?q=1", "#f", "/p?q#f", "@x", ":1", "\\x", "/%20"]

    @Test("the key read from a URL's text is the one Foundation's host, port and scheme give", arguments: 0..<6)
    func textMatchesFoundation(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 29, 1)
        func pick(_ pieces: [String]) -> String { pieces[Int(random.next() % UInt64(pieces.count))] }
        let alphabet = Array("abcxyzABCXYZ0189.-")
        var compared = 0
        var plain = 0
        for _ in 0..<600 {
            var host = String((0..<Int(random.next() % 12)).map { _ in alphabet[Int(random.next() % 18)] })
            if random.next() % 6 == 0 {
                let index = host.index(host.startIndex, offsetBy: Int(random.next() % UInt64(host.count + 1)))
                host.insert(contentsOf: pick(Self.oddHostParts), at: index)
            }
            let text =
                pick(Self.schemes) + pick(Self.separators) + pick(Self.userInfos) + host + pick(Self.ports)
                + pick(Self.tails)
            let base = URL(string: "https://Base.example:8443/a/b")
            let candidates = [URL(string: text), URL(string: text, relativeTo: base)]
            for url in candidates.compactMap({ $0 }) {
                compared += 1
                if HostKey.plainKey(url.absoluteString) != nil { plain += 1 }
                #expect(HostKey.of(url) == HostKey.foundationKey(url), "\(text) (\(url.absoluteString))")
            }
        }
        // Both paths were taken many times.
        #expect(plain > 100)
        #expect(compared - plain > 100)
    }
}
