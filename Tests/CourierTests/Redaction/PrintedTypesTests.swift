import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Public values that hold URLs, header fields or bodies print, and dump, none of their secrets.
@Suite("Printed and dumped values keep their secrets")
struct PrintedTypesTests {
    /// Every text Swift makes of `value`: `description`, `String(reflecting:)` and `dump`.
    private static func texts(_ value: Any) -> String {
        var dumped = ""
        dump(value, to: &dumped)
        return dumped + "\n\(value)\n" + String(reflecting: value)
    }

    private static let secrets = ["refl-pa55", "refl-5ecret", "refl-sig", "refl-hdr-5ecret", "refl-form-5ecret"]

    private static func expectNoSecret(in value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = texts(value)
        for secret in secrets {
            #expect(
                !text.contains(secret),
                "\(type(of: value)) shows \(secret): \(text)",
                sourceLocation: sourceLocation
            )
        }
    }

    private static let url = URL(
        string: "https://u:refl-pa55@h.example/f?api_key=refl-5ecret&X-Amz-Signature=refl-sig"
    )!

    @Test("a redirect hop prints its URLs redacted, and what it is")
    func redirectHop() {
        let hop = RedirectHop(originalURL: Self.url, url: Self.url, number: 1, status: 302, hasLeftOriginalOrigin: true)
        Self.expectNoSecret(in: hop)
        #expect(String(describing: hop).contains("302"))
        #expect(String(describing: hop).contains("h.example/f"))
    }

    @Test("header fields print credential values redacted, others as they are")
    func headers() {
        let headers: HTTPHeaders = [
            "X-API-Key": "refl-hdr-5ecret", "Authorization": "Bearer refl-5ecret", "Accept": "a/b",
        ]
        Self.expectNoSecret(in: headers)
        Self.expectNoSecret(in: headers.fields[0])
        #expect(String(describing: headers).contains("Accept: a/b"))
    }

    @Test("a typed request prints its method, target and fields, redacted; a body only by its kind")
    func request() throws {
        var request = Request<Data>.get(
            Self.url,
            query: ["token": "refl-5ecret"],
            headers: ["X-API-Key": "refl-hdr-5ecret"]
        )
        request.body = .form(["password": "refl-form-5ecret"])
        Self.expectNoSecret(in: request)
        Self.expectNoSecret(in: try #require(request.body))
        #expect(String(describing: request).hasPrefix("GET https://"))
        // A value with a separator in it is one value, encoded as the request encodes it.
        let separated = Request<Data>.get("/x", query: ["token": "a&refl-5ecret=1"])
        Self.expectNoSecret(in: separated)
    }

    @Test("a cache key and a cache event dump redacted, as they print")
    func cacheValues() {
        Self.expectNoSecret(in: HTTPCacheKey(resource: Self.url.absoluteString, partition: "GET"))
        Self.expectNoSecret(in: CacheEvent(kind: .hit, method: "GET", url: Self.url))
    }

    @Test("a registered credential header's value is redacted in dictionary and JSON form too")
    func registeredHeaderInDictionaryForm() {
        CredentialHeaders.register("X-Printed-Partner-Key")
        let dictionary = #"Rejected(headers: ["X-Printed-Partner-Key": "pk-live-0123456789"])"#
        #expect(!Redaction.redactedText(dictionary).contains("0123456789"))
        #expect(!Redaction.redactedText(#"{"X-Printed-Partner-Key":"pk-live-0123456789"}"#).contains("0123456789"))
        #expect(Redaction.redactedText(#"{"X-Printed-Other":"visible-value"}"#).contains("visible-value"))
    }
}
