import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Request methods and URLs")
struct RequestURLTests {
    @Test(
        "each factory sends its method",
        arguments: [
            (HTTPMethod.get, Request<EmptyResponse>.get("/r")),
            (.post, .post("/r")),
            (.put, .put("/r")),
            (.patch, .patch("/r")),
            (.delete, .delete("/r")),
            (.head, .head("/r")),
        ]
    )
    func methods(expected: HTTPMethod, request: Request<EmptyResponse>) async throws {
        let request = try #require(try await sent(request))
        #expect(request.httpMethod == expected.rawValue)
        #expect(request.url?.absoluteString == "https://api.example.test/r")
    }

    @Test(
        "paths join the base URL with exactly one slash, with or without a base path or trailing slash",
        arguments: [
            ("https://api.example.test", "/users/42", "https://api.example.test/users/42"),
            ("https://api.example.test", "users/42", "https://api.example.test/users/42"),
            ("https://api.example.test/", "/users/42", "https://api.example.test/users/42"),
            ("https://api.example.test/", "users/42", "https://api.example.test/users/42"),
            ("https://api.example.test/v1", "/users/42", "https://api.example.test/v1/users/42"),
            ("https://api.example.test/v1", "users/42", "https://api.example.test/v1/users/42"),
            ("https://api.example.test/v1/", "/users/42", "https://api.example.test/v1/users/42"),
            ("https://api.example.test/v1/", "users/42/", "https://api.example.test/v1/users/42/"),
            ("https://api.example.test:8443/a/b", "/c", "https://api.example.test:8443/a/b/c"),
            ("https://api.example.test/v1", "", "https://api.example.test/v1/"),
        ]
    )
    func pathJoining(base: String, path: String, expected: String) async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get(path), baseURL: URL(string: base)!))
        #expect(request.url?.absoluteString == expected)
    }

    @Test("repeated Cookie fields are joined with '; ' (RFC 6265), others with ',', by a request and by .headers")
    func repeatedCookieFields() async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Cookie", value: "a=1")
        headers.add(name: "cookie", value: "b=2")
        headers.add(name: "Accept", value: "text/plain")
        headers.add(name: "Accept", value: "application/json")
        let request = try Request<Data>.get("/x", headers: headers).urlRequest(baseURL: exampleBaseURL)
        #expect(request.value(forHTTPHeaderField: "Cookie") == "a=1; b=2")
        #expect(request.value(forHTTPHeaderField: "Accept")?.filter { $0 != " " } == "text/plain,application/json")

        let transport = MockTransport(.ok)
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [.headers(headers)])
        _ = try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("y")))
        #expect(transport.requests.first?.value(forHTTPHeaderField: "Cookie") == "a=1; b=2")
    }

    @Test("a path's unsafe characters are percent-encoded and existing escapes are kept")
    func pathEncoding() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/files/a b/é/100%25/x;v=1")))
        #expect(request.url?.absoluteString == "https://api.example.test/files/a%20b/%C3%A9/100%25/x;v=1")
    }

    @Test("a path starting with // stays on the base URL's host")
    func schemeRelativePathStaysHome() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("//evil.example/x")))
        #expect(request.url?.host == "api.example.test")
        #expect(request.url?.path == "/evil.example/x")
    }

    @Test("an absolute URL string ignores the base URL, in any letter case")
    func absoluteString() async throws {
        let lower = try #require(try await sent(Request<EmptyResponse>.get("https://other.example/x?y=1")))
        #expect(lower.url?.absoluteString == "https://other.example/x?y=1")
        let upper = try #require(try await sent(Request<EmptyResponse>.post("HTTP://other.example/x")))
        #expect(upper.url?.host?.lowercased() == "other.example")
        #expect(upper.url?.path == "/x")
    }

    @Test("an absolute URL works without a base URL, through the URL overload too")
    func absoluteWithoutBase() async throws {
        let viaString = try #require(
            try await sent(Request<EmptyResponse>.get("https://other.example/a"), baseURL: nil)
        )
        #expect(viaString.url?.absoluteString == "https://other.example/a")
        let viaURL = try #require(
            try await sent(
                Request<EmptyResponse>.get(URL(string: "https://other.example/b?x=1")!, query: ["y": "2"]),
                baseURL: nil
            )
        )
        #expect(viaURL.url?.absoluteString == "https://other.example/b?x=1&y=2")
    }

    @Test("a URL target is sent as the URL its string parses to, relative ones resolved (seeded)")
    func urlTargetAsParsed() throws {
        var random = SplitMix64(seed: 0xC0_0121)
        let schemes = ["http", "https", "HTTPS"]
        let hosts = ["api.example.test", "127.0.0.1", "[::1]", "xn--bcher-kva.example", "H.Example.Test", "a-b.c"]
        let segments = ["users", "42", "a%20b", "%E2%9C%93", "~x", "a;b=c", "", "..", "x.json", "A%2Fb"]
        let queries = ["", "?", "?a=1", "?a=1&b=%20", "?q=a+b", "?x"]
        let fragments = ["", "#", "#part", "#a%20b"]
        for _ in 0..<500 {
            var string = schemes.randomElement(using: &random)! + "://"
            if random.next() % 5 == 0 { string += "user:pw@" }
            string += hosts.randomElement(using: &random)!
            if random.next() % 3 == 0 { string += ":\(random.next() % 65_536)" }
            for _ in 0..<(random.next() % 4) { string += "/" + segments.randomElement(using: &random)! }
            string += queries.randomElement(using: &random)! + fragments.randomElement(using: &random)!
            let parsed = try #require(URL(string: string), "\(string)")
            // The same string relative to a base, which the request resolves first.
            let relative = try #require(URL(string: "rel/x", relativeTo: parsed))
            for url in [parsed, relative] {
                let expected = try #require(URL(string: url.absoluteString))
                let sent = try Request<Data>(method: .get, target: .url(url)) { data, _, _ in data }
                    .urlRequest(baseURL: nil).url
                #expect(sent == expected, "\(url.absoluteString)")
                #expect(sent?.baseURL == nil, "\(url.absoluteString)")
            }
        }
    }

    @Test("query items go before a URL's fragment, not into it")
    func queryBeforeFragment() async throws {
        let request = try #require(
            try await sent(
                Request<EmptyResponse>.get(URL(string: "https://other.example/doc#part")!, query: ["a": "1"])
            )
        )
        #expect(request.url?.query == "a=1")
        #expect(request.url?.fragment == "part")
    }
}

@Suite("Query encoding (RFC 3986)")
struct QueryEncodingTests {
    @Test(
        "names and values keep only unreserved characters as they are",
        arguments: [
            ("a b", "a%20b"),
            ("1+1", "1%2B1"),
            ("x&y", "x%26y"),
            ("k=v", "k%3Dv"),
            ("é", "%C3%A9"),
            ("日本", "%E6%97%A5%E6%9C%AC"),
            ("AZaz09-._~", "AZaz09-._~"),
            ("/?#[]@", "%2F%3F%23%5B%5D%40"),
            ("100%", "100%25"),
            ("emoji 🚀", "emoji%20%F0%9F%9A%80"),
        ]
    )
    func valueEncoding(raw: String, encoded: String) async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/s", query: [raw: .init(raw)])))
        #expect(request.encodedQuery == "\(encoded)=\(encoded)")
    }

    @Test("an array is a repeated key, nil is a bare key, and the written order is kept")
    func arraysNilAndOrder() async throws {
        let request = try #require(
            try await sent(
                Request<EmptyResponse>.get("/s", query: ["z": 1, "tag": ["x", "y z"], "flag": nil, "a": true])
            )
        )
        #expect(request.encodedQuery == "z=1&tag=x&tag=y%20z&flag&a=true")
    }

    @Test("variables of value types go into a query literal as their text, arrays of them as repeated keys")
    func variableValues() async throws {
        let id = 42
        let active = false
        let ratio = 0.5
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let ids: [Int] = [1, 2]
        let missing: Int? = nil
        let request = try #require(
            try await sent(
                Request<EmptyResponse>.get(
                    "/s",
                    query: ["id": id, "active": active, "r": ratio, "u": uuid, "ids": ids, "m": missing, "n": 7]
                )
            )
        )
        #expect(
            request.encodedQuery == "id=42&active=false&r=0.5&u=E621E1F8-C36C-495A-93FC-0C247A3E6E5F&ids=1&ids=2&m&n=7"
        )
    }

    @Test("a type of your own that prints itself conforms to QueryValueConvertible with an empty extension")
    func customValue() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/s", query: ["o": OrderID(raw: 9)])))
        #expect(request.encodedQuery == "o=order-9")
    }

    @Test("query items are appended to a query written in the path", arguments: ["/s?q=1", "/s?q=1&"])
    func existingQuery(path: String) async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get(path, query: ["page": 2])))
        #expect(request.encodedQuery == "q=1&page=2")
        #expect(request.url?.path == "/s")
    }

    @Test("a query written in the path is encoded but its delimiters are kept")
    func handWrittenQuery() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/s?q=a b&lang=é")))
        #expect(request.encodedQuery == "q=a%20b&lang=%C3%A9")
    }

    @Test("a trailing question mark with query items makes no empty pair")
    func trailingQuestionMark() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/s?", query: ["a": "1"])))
        #expect(request.url?.absoluteString == "https://api.example.test/s?a=1")
    }

    @Test("Query built from URLQueryItems keeps them as given")
    func fromItems() async throws {
        let items = [URLQueryItem(name: "b", value: "2"), URLQueryItem(name: "a", value: nil)]
        let request = try #require(try await sent(Request<EmptyResponse>.get("/s", query: Query(items))))
        #expect(request.encodedQuery == "b=2&a")
    }
}

private struct OrderID: CustomStringConvertible, QueryValueConvertible {
    let raw: Int
    var description: String { "order-\(raw)" }
}
