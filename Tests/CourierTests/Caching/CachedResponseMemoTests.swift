import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The memo beside each stored response (``CachedResponse/Memo``): what a hit reuses, and that it never serves
/// what another entry, another URL, another second of `Age` or an older version of the entry should get.
@Suite("CachedResponse.Memo")
struct CachedResponseMemoTests {
    private static let received = Date(timeIntervalSince1970: 1_700_000_000)

    private func get(_ path: String, _ headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: exampleBaseURL.appending(path: path))
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func client(_ transport: MockTransport, _ clock: ManualClock) -> Client {
        let cache = HTTPCache(clock: clock, startDate: Self.received)
        return Client(baseURL: exampleBaseURL, transport: transport, middleware: [.caching(cache)])
    }

    private func age(_ result: (Data, HTTPURLResponse)) -> String? {
        result.1.value(forHTTPHeaderField: "Age")
    }

    private func stored(_ headers: [String: String]) -> CachedResponse {
        CachedResponse(
            statusCode: 200,
            headers: headers,
            body: Data("body".utf8),
            requestDate: Self.received,
            responseDate: Self.received,
            variant: ""
        )
    }

    @Test("the Age served is exact to the second across the memo: one response per second, a new one as time moves")
    func ageMovesWithTime() async throws {
        let transport = MockTransport(.status(200, body: "items", headers: ["Cache-Control": "max-age=600"]))
        let clock = ManualClock()
        let client = client(transport, clock)
        _ = try await client.send(get("/items"))

        let first = try await client.send(get("/items"))
        let again = try await client.send(get("/items"))
        #expect(age(first) == "0" && age(again) == "0")
        // Within one second, the memo's response is served again.
        #expect(first.1 === again.1)

        clock.advance(by: .milliseconds(999))
        let late = try await client.send(get("/items"))
        #expect(age(late) == "0")
        #expect(late.1 === first.1)

        clock.advance(by: .milliseconds(1))
        let next = try await client.send(get("/items"))
        #expect(age(next) == "1")
        #expect(next.1 !== first.1)

        clock.advance(by: .seconds(58) + .milliseconds(500))
        let later = try await client.send(get("/items"))
        #expect(age(later) == "59")
        #expect(String(decoding: later.0, as: UTF8.self) == "items")
        #expect(transport.callCount == 1)
    }

    @Test("two entries never share a memo: each resource and each variant is served with its own fields")
    func entriesKeepTheirOwn() async throws {
        let transport = MockTransport { request in
            let path = request.urlRequest.url?.path ?? "/"
            let language = request.header("Accept-Language") ?? "none"
            return .status(
                200,
                body: path + " " + language,
                headers: [
                    "Cache-Control": "max-age=600", "Vary": "Accept-Language", "X-Path": path,
                    "Content-Language": language,
                ]
            )
        }
        let client = client(transport, ManualClock())
        let requests = [
            get("/a", ["Accept-Language": "en"]), get("/b", ["Accept-Language": "en"]),
            get("/a", ["Accept-Language": "fr"]),
        ]
        for request in requests { _ = try await client.send(request) }
        // Hits in the same second, interleaved: each from its own entry.
        for _ in 0..<2 {
            for request in requests {
                let (body, response) = try await client.send(request)
                let path = request.url!.path
                let language = request.value(forHTTPHeaderField: "Accept-Language")!
                #expect(String(decoding: body, as: UTF8.self) == path + " " + language)
                #expect(response.value(forHTTPHeaderField: "X-Path") == path)
                #expect(response.value(forHTTPHeaderField: "Content-Language") == language)
                #expect(response.url == request.url)
                #expect(response.value(forHTTPHeaderField: "Age") == "0")
            }
        }
        #expect(transport.callCount == 3)
    }

    @Test("one entry answering two URLs (fragments differ) serves each with its own URL")
    func urlIsPartOfTheMemo() async throws {
        let transport = MockTransport(.status(200, body: "page", headers: ["Cache-Control": "max-age=600"]))
        let client = client(transport, ManualClock())
        let plain = URLRequest(url: URL(string: "https://api.example.test/page")!)
        let first = URLRequest(url: URL(string: "https://api.example.test/page#first")!)
        let second = URLRequest(url: URL(string: "https://api.example.test/page#second")!)
        _ = try await client.send(plain)
        for request in [first, second, first, plain] {
            #expect(try await client.send(request).1.url == request.url)
        }
        #expect(transport.callCount == 1)
    }

    @Test("a 304 that updates an entry starts a new memo: its new lifetime, fields and restarted Age are used")
    func revalidatedEntryStartsAfresh() async throws {
        let transport = MockTransport { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return .status(304, headers: ["Cache-Control": "max-age=100", "X-Revision": "2"])
            }
            return .status(
                200,
                body: "v1",
                headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "X-Revision": "1"]
            )
        }
        let clock = ManualClock()
        let client = client(transport, clock)
        _ = try await client.send(get("/r"))
        clock.advance(by: .seconds(5))
        let beforeRevalidation = try await client.send(get("/r"))
        #expect(age(beforeRevalidation) == "5")
        #expect(beforeRevalidation.1.value(forHTTPHeaderField: "X-Revision") == "1")

        clock.advance(by: .seconds(5))
        let revalidated = try await client.send(get("/r"))
        #expect(transport.callCount == 2)
        #expect(age(revalidated) == "0")
        #expect(revalidated.1.value(forHTTPHeaderField: "X-Revision") == "2")

        // Fresh for 100 seconds now: what the old entry's memo said (10) no longer counts.
        clock.advance(by: .seconds(15))
        let afterRevalidation = try await client.send(get("/r"))
        #expect(transport.callCount == 2)
        #expect(age(afterRevalidation) == "15")
        #expect(afterRevalidation.1.value(forHTTPHeaderField: "X-Revision") == "2")
    }

    @Test("concurrent hits on two entries each get their own entry's response", .timeLimit(.minutes(1)))
    func concurrentHits() async throws {
        let transport = MockTransport { request in
            let path = request.urlRequest.url?.path ?? "/"
            return .status(200, body: path, headers: ["Cache-Control": "max-age=600", "X-Path": path])
        }
        let client = client(transport, ManualClock())
        for path in ["/a", "/b"] { _ = try await client.send(get(path)) }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<64 {
                let path = index.isMultiple(of: 2) ? "/a" : "/b"
                let request = get(path)
                group.addTask {
                    let (body, response) = try await client.send(request)
                    let matches =
                        String(decoding: body, as: UTF8.self) == path
                        && response.value(forHTTPHeaderField: "X-Path") == path
                    return matches ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(transport.callCount == 2)
    }

    @Test("copies share the memo; changing the status, a header field or a date starts a new one")
    func mutationStartsAfresh() {
        let original = stored(["Cache-Control": "max-age=60"])
        #expect(original.facts.freshnessLifetime == 60)
        var copy = original
        #expect(copy.memo === original.memo)

        copy.headers["Cache-Control"] = "max-age=5"
        #expect(copy.memo !== original.memo)
        #expect(copy.facts.freshnessLifetime == 5)
        #expect(original.facts.freshnessLifetime == 60)

        var aged = original
        aged.headers["Age"] = "30"
        #expect(HTTPCachePolicy.currentAge(aged, now: Self.received) == 30)
        var later = aged
        later.requestDate = Self.received.addingTimeInterval(-10)
        #expect(HTTPCachePolicy.currentAge(later, now: Self.received) == 40)
        var moved = aged
        moved.responseDate = Self.received.addingTimeInterval(-100)
        #expect(HTTPCachePolicy.currentAge(moved, now: Self.received) == 130)
        var status = original
        let before = status.memo
        status.statusCode = 203
        #expect(status.memo !== before)
    }

    @Test("the memo takes no part in equality, hashing or the encoded form")
    func memoIsNotPartOfTheValue() throws {
        let first = stored(["Cache-Control": "max-age=60", "ETag": "\"a\""])
        let second = stored(["Cache-Control": "max-age=60", "ETag": "\"a\""])
        _ = first.facts
        #expect(first.memo !== second.memo)
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != stored(["Cache-Control": "max-age=61", "ETag": "\"a\""]))

        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(first)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(
            Set(object.keys) == ["statusCode", "headers", "body", "requestDate", "responseDate", "variant"]
        )
        let decoded = try JSONDecoder().decode(CachedResponse.self, from: data)
        #expect(decoded == first)
        #expect(decoded.facts == first.facts)
    }

    @Test(
        "the request's fields read in one pass say what value(forHTTPHeaderField:) says",
        arguments: [
            [:], ["Accept": "application/json"], ["If-None-Match": "\"x\""], ["range": "bytes=0-1"],
            ["IF-MODIFIED-SINCE": "Sun, 06 Nov 1994 08:49:37 GMT"], ["If-Match": "*"], ["If-Unmodified-Since": "x"],
            ["If-Range": "\"x\""], ["Cache-Control": "no-store"], ["cache-control": "max-age=0, no-cache"],
            ["Pragma": "no-cache"], ["pragma": "No-Cache", "Cache-Control": "max-age=5"], ["Pragma": "x"],
            ["Cache-Control": "max-age=5", "Accept-Language": "en", "Range": "bytes=1-"],
        ] as [[String: String]]
    )
    func requestFieldsInOnePass(headers: [String: String]) {
        let request = get("/x", headers)
        let fields = HTTPCachePolicy.requestFields(request)
        let bypassing = HTTPCachePolicy.bypassingRequestHeaders.contains {
            request.value(forHTTPHeaderField: $0) != nil
        }
        #expect(fields.bypassing == bypassing)
        if !bypassing { #expect(fields.directives == HTTPCachePolicy.requestDirectives(request)) }
    }
}
