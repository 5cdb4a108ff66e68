import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Request`'s path joining and scheme check read the strings' UTF-8; these hold them to the `Character`-based
/// code they replaced (kept here as the reference), on seeded strings.
@Suite("Joining a path to the base URL, over UTF-8")
struct RequestURLJoiningTests {
    /// The join as it was written over `Character`s.
    private static func referenceJoin(base: String, path: String) -> String {
        var base = base
        if let queryStart = base.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            base = String(base[..<queryStart])
        }
        while base.hasSuffix("/") { base.removeLast() }
        var pathPart = Substring(path)
        var queryPart: Substring?
        if let questionMark = path.firstIndex(of: "?") {
            pathPart = path[..<questionMark]
            queryPart = path[path.index(after: questionMark)...]
        }
        while pathPart.hasPrefix("/") { pathPart.removeFirst() }
        var result = base + "/" + PercentEncoding.encodePath(String(pathPart))
        if let queryPart {
            result += "?" + PercentEncoding.encodeQueryString(String(queryPart))
        }
        return result
    }

    /// A string of `count` pieces drawn from `pieces`.
    private static func draw(_ pieces: [String], _ count: UInt64, _ random: inout SplitMix64) -> String {
        (0..<(random.next() % (count + 1))).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test("the join agrees with the Character-based one on seeded bases and paths")
    func joinAgrees() {
        var random = SplitMix64(seed: 0x101_0101)
        // No combining mark right after a delimiter: there the two differ on purpose (see the next test).
        let basePieces = [
            "https://api.example.test", "http://127.0.0.1:8080", "/", "/v1", "?", "#", "x", "é", "%20", "?a=1",
        ]
        let pathPieces = [
            "/", "users", "42", "?", "a=1", "&", "b=é ✓", " ", "%2F", "#", "é", "👩‍👩‍👧", "e\u{301}", "~", "+",
        ]
        for _ in 0..<2_000 {
            let base = Self.draw(basePieces, 6, &random)
            let path = Self.draw(pathPieces, 8, &random)
            #expect(Request<Data>.join(base: base, path: path) == Self.referenceJoin(base: base, path: path))
        }
    }

    @Test("a ? or / followed by a combining mark is a delimiter, as it is to a URL parser")
    func combiningMarkAfterDelimiter() {
        let base = "https://api.example.test"
        #expect(Request<Data>.join(base: base, path: "/\u{301}x") == base + "/%CC%81x")
        #expect(Request<Data>.join(base: base, path: "/a?\u{301}=1") == base + "/a?%CC%81=1")
        // The Character-based join saw `/́` and `?́` as characters that are neither delimiter.
        #expect(Self.referenceJoin(base: base, path: "/\u{301}x") == base + "//%CC%81x")
    }

    @Test("the scheme check agrees with lowercasing the first eight characters, on seeded strings")
    func schemeCheckAgrees() {
        var random = SplitMix64(seed: 0x5C4E_3E)
        // Letters in both cases, and characters whose lowercase is ASCII or that look like the scheme's letters. No
        // combining mark: after the scheme's last `/` the two differ on purpose (below).
        let pieces = ["h", "H", "t", "T", "p", "P", "s", "S", ":", "/", "\u{212A}", "\u{17F}", "\u{130}", "é", "x"]
        for _ in 0..<5_000 {
            let path = Self.draw(pieces, 10, &random)
            let head = path.prefix(8).lowercased()
            let expected = head.hasPrefix("http://") || head.hasPrefix("https://")
            #expect(Request<Data>.startsWithHTTPScheme(path) == expected, "\(path.unicodeScalars.map(\.value))")
        }
        // And a few that must be absolute, which random draws reach rarely.
        // A combining mark after `//` starts the host, not a path: the URL's parser refuses it, where the
        // Character-based check saw `/́` and joined the whole string to the base URL as a path.
        for path in ["http://h/x", "HTTPS://h", "hTtPs://", "Http://", "http://\u{301}x"] {
            #expect(Request<Data>.startsWithHTTPScheme(path))
        }
        for path in ["http:/h", "https:", "httpss://", "ftp://h", "/http://", "http\u{301}://h"] {
            #expect(!Request<Data>.startsWithHTTPScheme(path))
        }
    }
    @Test(
        "a value encoded with PathSegment is one segment: it never moves the path, adds a query or ends the path",
        arguments: ["../admin", "42?role=admin", "a%2F..%2Fb", "..", ".", "a#b", "x/y", "é ü", ""]
    )
    func pathSegmentIsOneSegment(_ value: String) throws {
        let segment = PathSegment.encoded(value)
        let url = try Request<Data>.get("/users/\(segment)/orders").urlRequest(baseURL: exampleBaseURL).url!
        #expect(url.query == nil)
        #expect(url.fragment == nil)
        #expect(url.absoluteString == "https://api.example.test/users/\(segment)/orders")
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)!.percentEncodedPath
            .split(separator: "/", omittingEmptySubsequences: false)
        #expect(components.count == 4)
        #expect(components[2].removingPercentEncoding == value)
    }

    @Test("the base URL's query and fragment are not kept; the request's query items are")
    func baseQueryIsNotKept() throws {
        let base = URL(string: "https://api.example.test/v1?api-version=2024-01-01#top")!
        let url = try Request<Data>.get("/users", query: ["page": "2"]).urlRequest(baseURL: base).url!
        #expect(url.absoluteString == "https://api.example.test/v1/users?page=2")
    }
}
