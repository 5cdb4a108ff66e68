import CourierTesting
import Foundation
import Testing

@testable import Courier

/// `RequestValidation.isAbsolute` reads the host still percent-encoded, and takes `URL.host` only for a host with a
/// `%` in it; `url.scheme != nil && url.host != nil`, the check every transport made before, is the reference it
/// must agree with, on URLs whose hosts decode, fail to decode, or are missing.
@Suite("A URL's scheme and host checked without decoding the host")
struct AbsoluteURLTests {
    private static let schemes = ["http://", "https://", "HTTP://", "a+b.c-d://", "mailto:", "file://", "http:/", ""]
    private static let hosts = [
        "", "127.0.0.1", "api.example.com", "[::1]", "[2001:db8::1]", "%41pi.example.com", "%zz", "%", "a%2",
        "%C3%A9t%C3%A9.fr", "%00", "%FF%FE", "user:pass@example.com", "@", "a%40b@example.com", "xn--bcher-kva.de",
    ]
    private static let rests = ["", "/", "/users/42", ":8080/x", "?q=1", "#top", "//double", "/%zz", ":"]

    @Test("both checks agree", arguments: 0..<4)
    func agree(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 31, 1)
        func pick(_ options: [String]) -> String { options[Int(random.next() % UInt64(options.count))] }
        var compared = 0
        var absolute = 0
        var decodingFails = 0
        for _ in 0..<2_000 {
            let text = pick(Self.schemes) + pick(Self.hosts) + pick(Self.rests)
            guard let url = URL(string: text) else { continue }
            compared += 1
            let reference = url.scheme != nil && url.host != nil
            #expect(RequestValidation.isAbsolute(url) == reference, "\(text)")
            if reference { absolute += 1 }
            if url.host(percentEncoded: true) != nil, url.host == nil { decodingFails += 1 }
        }
        // Each kind of URL came up: absolute, not absolute, and a host that does not decode.
        #expect(compared > 1_000)
        #expect(absolute > 200)
        #expect(compared - absolute > 200)
        #expect(decodingFails > 0)
    }

    @Test("a relative URL is absolute when its base is")
    func relative() throws {
        let base = try #require(URL(string: "https://api.example.com/v1/"))
        #expect(RequestValidation.isAbsolute(try #require(URL(string: "users/42", relativeTo: base))))
        #expect(!RequestValidation.isAbsolute(try #require(URL(string: "users/42"))))
        #expect(!RequestValidation.isAbsolute(try #require(URL(string: "/users/42", relativeTo: URL(string: "/v1/")))))
    }
}
