import CourierTesting
import Foundation
import Testing

@testable import Courier

/// `HTTPOrigin.matches` says yes from the URL's text when it begins with the origin's `scheme://host[:port]`; the
/// URL's components, as Foundation parses them, are the reference it must agree with, on every kind of URL a
/// credential could be sent to.
@Suite("An origin matched from a URL's text and from its components")
struct HTTPOriginMatchTests {
    private static let schemes = ["http", "https", "HTTP", "Https", "ftp", "ws"]
    private static let hosts = [
        "127.0.0.1", "api.example.com", "API.Example.com", "api.example.com.evil.org", "example.com",
        "xn--bcher-kva.de",
        "localhost", "[::1]", "[2001:db8::1]", "a-b.c", "api%2Eexample.com", "evil.org",
        // The same length and first byte as hosts above, another host.
        "api.example.org", "127.0.0.2", "[::2]",
    ]
    private static let ports = ["", ":80", ":443", ":8080", ":08080", ":80801", ":", ":65535", ":999999", ":8080x"]
    private static let userInfo = ["", "", "", "user@", "user:pass@", "api.example.com@", "a%40b@"]
    private static let rests = ["", "/", "/users/42", "?q=1", "#top", "/a?b#c", "@evil.org/", ".evil.org/", "\\evil"]

    @Test("both ways agree, and a URL of another origin never matches", arguments: 0..<4)
    func agree(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 30, 1)
        func pick(_ options: [String]) -> String { options[Int(random.next() % UInt64(options.count))] }
        var matched = 0
        var compared = 0
        for _ in 0..<3_000 {
            let origin = pick(Self.schemes) + "://" + pick(Self.hosts) + pick(Self.ports)
            guard let originURL = URL(string: origin + "/"), let httpOrigin = HTTPOrigin(originURL) else { continue }
            // Half the time a URL built on the same origin text, the rest any URL.
            let text =
                random.next() % 2 == 0
                ? origin + pick(Self.rests)
                : pick(Self.schemes) + "://" + pick(Self.userInfo) + pick(Self.hosts) + pick(Self.ports)
                    + pick(Self.rests)
            guard let url = URL(string: text) else { continue }
            compared += 1
            let fast = httpOrigin.matches(url)
            #expect(fast == httpOrigin.matchesByComponents(url), "\(origin) vs \(text)")
            if fast {
                matched += 1
                #expect(HTTPOrigin(url) == httpOrigin, "\(origin) vs \(text)")
            }
        }
        #expect(compared > 2_000)
        #expect(matched > 300)
    }

    @Test("a relative URL is matched by the origin of the URL it resolves to")
    func relative() throws {
        let base = try #require(URL(string: "https://api.example.com/v1/"))
        let origin = try #require(HTTPOrigin(base))
        #expect(origin.matches(try #require(URL(string: "users/42", relativeTo: base))))
        #expect(!origin.matches(try #require(URL(string: "//evil.org/x", relativeTo: base))))
        #expect(!origin.matches(try #require(URL(string: "http://api.example.com/x"))))
    }
}
