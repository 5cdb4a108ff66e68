import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Request bodies and headers")
struct RequestBodyTests {
    private struct NewUser: Encodable, Sendable {
        var firstName: String
        var isAdmin: Bool
    }

    private static var sortedEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    private static var snakeCaseEncoder: JSONEncoder {
        let encoder = sortedEncoder
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    @Test("a JSON body is encoded with the client's encoder and labelled application/json")
    func jsonWithClientEncoder() async throws {
        let request = try #require(
            try await sent(
                Request<EmptyResponse>.post("/users", json: NewUser(firstName: "Ada", isAdmin: false)),
                encoder: Self.snakeCaseEncoder
            )
        )
        #expect(request.bodyText == #"{"first_name":"Ada","is_admin":false}"#)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test("a request's own encoder wins over the client's")
    func jsonWithRequestEncoder() async throws {
        let body = RequestBody.json(NewUser(firstName: "Ada", isAdmin: true), encoder: Self.snakeCaseEncoder)
        let request = try #require(
            try await sent(Request<EmptyResponse>.put("/users/1", body: body), encoder: Self.sortedEncoder)
        )
        #expect(request.bodyText == #"{"first_name":"Ada","is_admin":true}"#)
    }

    @Test("a Content-Type set on the request is kept")
    func explicitContentType() async throws {
        let request = try #require(
            try await sent(
                Request<EmptyResponse>.patch(
                    "/users/1",
                    json: ["op": "replace"],
                    headers: ["content-type": "application/merge-patch+json"]
                )
            )
        )
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/merge-patch+json")
        #expect(request.bodyText == #"{"op":"replace"}"#)
    }

    @Test("a form body is percent-encoded per RFC 3986 and keeps order and repeated names")
    func formBody() async throws {
        let body = RequestBody.form([
            URLQueryItem(name: "q", value: "a b+c&d=e"),
            URLQueryItem(name: "tag", value: "x"),
            URLQueryItem(name: "tag", value: "ü"),
            URLQueryItem(name: "flag", value: nil),
        ])
        let request = try #require(try await sent(Request<EmptyResponse>.post("/search", body: body)))
        #expect(request.bodyText == "q=a%20b%2Bc%26d%3De&tag=x&tag=%C3%BC&flag")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
    }

    @Test("a form body from a dictionary is sorted by name")
    func formDictionary() async throws {
        let request = try #require(
            try await sent(Request<EmptyResponse>.post("/f", body: .form(["b": "2", "a": "1", "c": "3"])))
        )
        #expect(request.bodyText == "a=1&b=2&c=3")
    }

    @Test("raw bytes are sent as they are, with the given content type, a default, or none")
    func rawData() async throws {
        let bytes = Data([0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF])
        let png = try #require(
            try await sent(Request<EmptyResponse>.put("/img", body: .data(bytes, contentType: "image/png")))
        )
        #expect(png.httpBody == bytes)
        #expect(png.value(forHTTPHeaderField: "Content-Type") == "image/png")

        let octets = try #require(try await sent(Request<EmptyResponse>.put("/img", body: .data(bytes))))
        #expect(octets.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")

        let bare = try #require(
            try await sent(Request<EmptyResponse>.put("/img", body: .data(bytes, contentType: nil)))
        )
        #expect(bare.httpBody == bytes)
        #expect(bare.value(forHTTPHeaderField: "Content-Type") == nil)

        let text = try #require(try await sent(Request<EmptyResponse>.post("/t", body: .text("héllo"))))
        #expect(text.httpBody == Data("héllo".utf8))
        #expect(text.value(forHTTPHeaderField: "Content-Type") == "text/plain; charset=utf-8")
    }

    @Test("a request without a body sends none")
    func noBody() async throws {
        let request = try #require(try await sent(Request<EmptyResponse>.get("/x")))
        #expect(request.httpBody == nil)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test("headers are sent, and repeated fields are all kept")
    func headers() async throws {
        var headers: HTTPHeaders = ["X-Trace": "t-1"]
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "accept", value: "text/plain")
        let request = try #require(
            try await sent(Request<EmptyResponse>.get("/x", headers: headers).header("X-Extra", "yes"))
        )
        #expect(request.value(forHTTPHeaderField: "X-Trace") == "t-1")
        #expect(request.value(forHTTPHeaderField: "X-Extra") == "yes")
        let accept = request.value(forHTTPHeaderField: "Accept")?.split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(accept == ["application/json", "text/plain"])
    }

    @Test("header(_:nil) removes every field of that name, in any case")
    func removeHeader() async throws {
        let base: Request<EmptyResponse> = .get("/x", headers: ["X-A": "1", "x-a": "2", "X-B": "3"])
        let request = try #require(try await sent(base.header("X-a", nil)))
        #expect(request.value(forHTTPHeaderField: "X-A") == nil)
        #expect(request.value(forHTTPHeaderField: "X-B") == "3")
    }
}
