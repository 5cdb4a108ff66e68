import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("HTTPCachePolicy (RFC 9111 rules, synchronous)")
struct HTTPCachePolicyTests {
    private static let received = Date(timeIntervalSince1970: 1_700_000_000)
    private static let url = URL(string: "https://api.example.test/items/1")!

    private func stored(_ headers: [String: String], requested: Date = received, status: Int = 200) -> CachedResponse {
        CachedResponse(
            statusCode: status,
            headers: headers,
            body: Data("body".utf8),
            requestDate: requested,
            responseDate: Self.received,
            variant: ""
        )
    }

    private func request(_ headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: Self.url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test("Cache-Control directives: case, quotes, arguments, the first of a repeated one, field lists")
    func parsesDirectives() {
        let directives = CacheControl(#"Public, MAX-AGE="60", max-age=5, no-cache="Set-Cookie", stale-if-error=30"#)
        #expect(directives.isPublic)
        #expect(directives.maxAge == 60)
        #expect(directives.noCache)
        #expect(directives.staleIfError == 30)
        #expect(!directives.noStore && !directives.isPrivate && !directives.mustRevalidate)
        #expect(CacheControl("max-age=abc").maxAge == 0)
        #expect(
            CacheControl("private, must-revalidate, no-store, s-maxage=9")
                == {
                    var expected = CacheControl()
                    expected.isPrivate = true
                    expected.mustRevalidate = true
                    expected.noStore = true
                    expected.sharedMaxAge = 9
                    return expected
                }()
        )
    }

    @Test("Cache-Control items: tabs and spaces around them and their arguments, commas inside quotes, empty items")
    func parsesWhitespaceAndQuotedCommas() {
        let directives = CacheControl("\t no-cache=\"Set-Cookie, X-Session\" ,, max-age = 120\t, private ,")
        #expect(directives.noCache)
        #expect(directives.maxAge == 120)
        #expect(directives.isPrivate)
        #expect(!directives.isPublic && !directives.noStore)
        #expect(CacheControl(" \t ") == CacheControl())
        #expect(CacheControl("max-age=\"\"").maxAge == 0)
    }

    @Test("freshness lifetime: max-age wins over Expires; s-maxage is ignored; Expires minus Date; none without either")
    func freshnessLifetime() {
        let expires = httpDate(Self.received.addingTimeInterval(300))
        let date = httpDate(Self.received.addingTimeInterval(-100))
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Cache-Control": "max-age=60", "Expires": expires])) == 60)
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Cache-Control": "s-maxage=600"])) == 0)
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Expires": expires, "Date": date])) == 400)
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Expires": expires])) == 300)
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Expires": "0", "Date": date])) == 0)
        // No heuristic: a Last-Modified long ago gives no lifetime.
        let modified = httpDate(Self.received.addingTimeInterval(-86_400 * 365))
        #expect(HTTPCachePolicy.freshnessLifetime(stored(["Last-Modified": modified])) == 0)
    }

    @Test("current age: the larger of the apparent age and Age plus the response delay, plus the time stored")
    func currentAge() {
        let now = Self.received.addingTimeInterval(10)
        #expect(HTTPCachePolicy.currentAge(stored([:]), now: now) == 10)
        #expect(HTTPCachePolicy.currentAge(stored(["Age": "30"]), now: now) == 40)
        // A Date 50 s before arrival: apparent age 50.
        let old = httpDate(Self.received.addingTimeInterval(-50))
        #expect(HTTPCachePolicy.currentAge(stored(["Date": old, "Age": "5"]), now: now) == 60)
        // The request took 3 s: Age 5 becomes 8.
        let slow = stored(["Age": "5"], requested: Self.received.addingTimeInterval(-3))
        #expect(HTTPCachePolicy.currentAge(slow, now: now) == 18)
    }

    @Test("an Age too large for an Int is served clamped, and the response is stale, never fresh for ever")
    func hugeAge() throws {
        let now = Self.received.addingTimeInterval(10)
        let response = stored(["Age": "100000000000000000000", "Cache-Control": "max-age=60"])
        let served = try #require(HTTPCachePolicy.servedHeaders(response, now: now)["Age"].flatMap { Int($0) })
        #expect(served >= 1 << 40)
        #expect(!HTTPCachePolicy.isFresh(response, for: request(), now: now))
        // RFC 9111 §5.1: the first member of a list; a value that is not a non-negative integer is ignored.
        #expect(HTTPCachePolicy.currentAge(stored(["Age": "30, 99"]), now: now) == 40)
        #expect(HTTPCachePolicy.currentAge(stored(["Age": "1e308"]), now: now) == 10)
        #expect(HTTPCachePolicy.currentAge(stored(["Age": "-5"]), now: now) == 10)
    }

    @Test("fresh until max-age, then stale; the request's no-cache, Pragma and max-age force revalidation")
    func freshness() {
        let response = stored(["Cache-Control": "max-age=60"])
        #expect(HTTPCachePolicy.isFresh(response, for: request(), now: Self.received.addingTimeInterval(59)))
        #expect(!HTTPCachePolicy.isFresh(response, for: request(), now: Self.received.addingTimeInterval(60)))
        let soon = Self.received.addingTimeInterval(20)
        #expect(!HTTPCachePolicy.isFresh(response, for: request(["Cache-Control": "no-cache"]), now: soon))
        #expect(!HTTPCachePolicy.isFresh(response, for: request(["Pragma": "no-cache"]), now: soon))
        #expect(!HTTPCachePolicy.isFresh(response, for: request(["Cache-Control": "max-age=0"]), now: soon))
        #expect(!HTTPCachePolicy.isFresh(response, for: request(["Cache-Control": "max-age=10"]), now: soon))
        #expect(HTTPCachePolicy.isFresh(response, for: request(["Cache-Control": "max-age=30"]), now: soon))
        #expect(!HTTPCachePolicy.isFresh(stored(["Cache-Control": "no-cache, max-age=60"]), for: request(), now: soon))
    }

    @Test(
        "what is stored",
        arguments: [
            (200, ["Cache-Control": "max-age=60"], [:], false, true),
            (200, ["ETag": "\"a\""], [:], false, true),
            (200, ["Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"], [:], false, true),
            (200, [:], [:], false, false),
            (200, ["Cache-Control": "no-store, max-age=60"], [:], false, false),
            (200, ["Cache-Control": "max-age=60"], ["Cache-Control": "no-store"], false, false),
            (200, ["Cache-Control": "max-age=60", "Vary": "Accept, *"], [:], false, false),
            (206, ["Cache-Control": "max-age=60"], [:], false, false),
            (500, ["Cache-Control": "max-age=60"], [:], false, false),
            (404, ["Cache-Control": "max-age=60"], [:], false, true),
            // For one user, and without a credential the cache cannot tell whose: answers its caller only.
            (200, ["Cache-Control": "private, max-age=60"], [:], false, false),
            (200, ["Cache-Control": "private, must-revalidate, max-age=60"], [:], true, true),
            (200, ["Cache-Control": "private, max-age=60"], [:], true, false),
            (200, ["Cache-Control": "max-age=60"], [:], true, false),
            (200, ["Cache-Control": "public, max-age=60"], [:], true, true),
            (200, ["Cache-Control": "must-revalidate, max-age=60"], [:], true, true),
            (200, ["Cache-Control": "private, max-age=60, s-maxage=60"], [:], true, true),
        ] as [(Int, [String: String], [String: String], Bool, Bool)]
    )
    func storability(
        status: Int,
        headers: [String: String],
        requestHeaders: [String: String],
        hasCredential: Bool,
        expected: Bool
    ) {
        let variant = HTTPCachePolicy.variantToStore(
            request: request(requestHeaders),
            hasCredential: hasCredential,
            statusCode: status,
            headers: headers
        )
        #expect((variant != nil) == expected)
    }

    @Test("Vary: the named request headers make the variant; a request matches only the same values")
    func vary() throws {
        let english = request(["Accept-Language": "en", "Accept": "application/json"])
        let variant = try #require(HTTPCachePolicy.variant(of: english, vary: "accept-language, Accept"))
        #expect(variant == "accept:application/json\naccept-language:en")
        var entry = stored(["Vary": "Accept-Language, Accept"])
        entry.variant = variant
        #expect(HTTPCachePolicy.matches(entry, english))
        #expect(!HTTPCachePolicy.matches(entry, request(["Accept-Language": "fr", "Accept": "application/json"])))
        #expect(!HTTPCachePolicy.matches(entry, request(["Accept": "application/json"])))
        #expect(HTTPCachePolicy.variant(of: english, vary: nil) == "")
        // A credential named by Vary is recorded as present, never with its value.
        let authorized = request(["Authorization": "Bearer vary-secret"])
        #expect(HTTPCachePolicy.variant(of: authorized, vary: "Authorization") == "authorization:(credential)")
        #expect(HTTPCachePolicy.variant(of: english, vary: "*") == nil)
    }

    @Test("stale-if-error: only when the response allows it, within its bound, and never with must-revalidate")
    func staleIfError() {
        let allowing = stored(["Cache-Control": "max-age=10, stale-if-error=60"])
        #expect(HTTPCachePolicy.mayServeOnError(allowing, now: Self.received.addingTimeInterval(70)))
        #expect(!HTTPCachePolicy.mayServeOnError(allowing, now: Self.received.addingTimeInterval(71)))
        #expect(!HTTPCachePolicy.mayServeOnError(stored(["Cache-Control": "max-age=10"]), now: Self.received))
        let strict = stored(["Cache-Control": "max-age=10, stale-if-error=60, must-revalidate"])
        #expect(!HTTPCachePolicy.mayServeOnError(strict, now: Self.received.addingTimeInterval(20)))
        let noCache = stored(["Cache-Control": "no-cache, stale-if-error=60"])
        #expect(!HTTPCachePolicy.mayServeOnError(noCache, now: Self.received.addingTimeInterval(20)))
    }

    @Test("revalidation asks with the ETag and Last-Modified; a 304 replaces headers but not the ones of its own")
    func revalidation() {
        let entry = stored([
            "ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT", "Content-Length": "4",
            "Cache-Control": "max-age=10", "X-Kept": "yes",
        ])
        let conditions = HTTPCachePolicy.conditionalHeaders(for: entry)
        #expect(conditions.map(\.name) == ["If-None-Match", "If-Modified-Since"])
        #expect(conditions.map(\.value) == ["\"v1\"", "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(HTTPCachePolicy.conditionalHeaders(for: stored([:])).isEmpty)

        let later = Self.received.addingTimeInterval(100)
        let updated = HTTPCachePolicy.updated(
            entry,
            with: ["cache-control": "max-age=99", "Content-Length": "0"],
            requestDate: later,
            responseDate: later
        )
        #expect(updated.header("Cache-Control") == "max-age=99")
        #expect(updated.headers.keys.filter { $0.lowercased() == "cache-control" }.count == 1)
        #expect(updated.header("Content-Length") == "4")
        #expect(updated.header("X-Kept") == "yes")
        #expect(updated.body == entry.body)
        #expect(updated.responseDate == later)
        #expect(HTTPCachePolicy.servedHeaders(updated, now: later.addingTimeInterval(7))["Age"] == "7")
    }

    @Test("unsafe methods with a 2xx or 3xx invalidate the URI and same-origin Location and Content-Location")
    func invalidation() {
        let headers = [
            "Location": "/items/2", "Content-Location": "https://other.example.test/items/3",
        ]
        #expect(
            HTTPCachePolicy.invalidatedResources(method: "POST", url: Self.url, statusCode: 201, headers: headers)
                == ["https://api.example.test/items/1", "https://api.example.test/items/2"]
        )
        #expect(
            HTTPCachePolicy.invalidatedResources(method: "DELETE", url: Self.url, statusCode: 404, headers: [:]) == []
        )
        #expect(HTTPCachePolicy.invalidatedResources(method: "GET", url: Self.url, statusCode: 200, headers: [:]) == [])
        #expect(
            HTTPCachePolicy.invalidatedResources(method: "OPTIONS", url: Self.url, statusCode: 200, headers: [:]) == []
        )
        #expect(
            HTTPCachePolicy.invalidatedResources(method: "PATCH", url: Self.url, statusCode: 204, headers: [:]).count
                == 1
        )
        #expect(HTTPCachePolicy.resource(URL(string: "https://a.test/x?q=1#frag")!) == "https://a.test/x?q=1")
    }

    @Test(
        "a resource leaves out the URL's user info, and only that",
        arguments: [
            ("https://ada:pw@a.test/x?q=1#frag", "https://a.test/x?q=1"),
            ("https://ada@a.test:8443/x", "https://a.test:8443/x"),
            ("https://@a.test/", "https://a.test/"),
            ("https://a.test/x@y?next=https://u:p@b.test/", "https://a.test/x@y?next=https://u:p@b.test/"),
            ("https://a.test?u=v@w", "https://a.test?u=v@w"),
            ("https://a.test", "https://a.test"),
        ]
    )
    func resourceWithoutUserInfo(url: String, resource: String) throws {
        #expect(HTTPCachePolicy.resource(try #require(URL(string: url))) == resource)
    }
}
