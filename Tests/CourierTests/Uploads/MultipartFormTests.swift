import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("multipart/form-data bodies", .timeLimit(.minutes(1)))
struct MultipartFormTests {
    /// The form's bytes as a transport reads them.
    private func encoded(_ form: MultipartForm) throws -> (Data, URLRequest) {
        let request = try uploadRequest(.multipart(form), method: .post)
        return (try readAsInputStream(request), request)
    }

    @Test("text, data and file parts are laid out byte for byte as RFC 7578 and RFC 2046 say")
    func layout() throws {
        let file = try TemporaryFile(size: 5, name: "notes.txt")
        defer { file.remove() }
        let form = MultipartForm(
            [
                .text("title", "Q3 report"),
                .data("meta", Data("{\"a\":1}".utf8), contentType: "application/json"),
                .file("attachment", at: file.url, contentType: "text/plain"),
                .data("raw", Data([0, 1, 2]), filename: "raw.bin"),
            ],
            boundary: "XyZ"
        )
        let (body, request) = try encoded(form)
        var expected = Data()
        expected.append(contentsOf: "--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nQ3 report\r\n".utf8)
        expected.append(
            contentsOf:
                "--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n"
                .utf8
        )
        expected.append(
            contentsOf:
                "--XyZ\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\n"
                .utf8
        )
        expected.append(file.contents)
        expected.append(
            contentsOf:
                "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"raw\"; filename=\"raw.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8
        )
        expected.append(contentsOf: [0, 1, 2])
        expected.append(contentsOf: "\r\n--XyZ--\r\n".utf8)
        #expect(body == expected)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/form-data; boundary=XyZ")
        #expect(request.httpBody == nil)
    }

    @Test("non-ASCII names and filenames are sent as UTF-8; a quote, CR and LF are percent-encoded")
    func nonASCIIAndEscaping() throws {
        let form = MultipartForm(
            [
                .data("prénom", Data("x".utf8), filename: "été \"final\"\r\n.pdf", contentType: nil),
                .text("名前", "値"),
            ],
            boundary: "b"
        )
        let (body, _) = try encoded(form)
        let expected =
            "--b\r\nContent-Disposition: form-data; name=\"prénom\"; filename=\"été %22final%22%0D%0A.pdf\"\r\n\r\nx\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"名前\"\r\n\r\n値\r\n--b--\r\n"
        #expect(body == Data(expected.utf8))
        #expect(!String(decoding: body, as: UTF8.self).contains("filename*"))
    }

    @Test(
        "a quote that begins a grapheme cluster is percent-encoded too: no parameter can be injected",
        arguments: ["\u{301}", "\u{200D}", "\u{200C}", "\u{FE0F}"]
    )
    func quoteInCluster(_ mark: String) throws {
        let name = "a\"\(mark); filename=\"\(mark)evil.sh"
        let form = MultipartForm([.data(name, Data("x".utf8), filename: name, contentType: nil)], boundary: "b")
        let (body, _) = try encoded(form)
        let escaped = "a%22\(mark); filename=%22\(mark)evil.sh"
        let expected =
            "--b\r\nContent-Disposition: form-data; name=\"\(escaped)\"; filename=\"\(escaped)\"\r\n\r\nx\r\n--b--\r\n"
        #expect(body == Data(expected.utf8))
        // Only the quotes around the two values.
        #expect(body.filter { $0 == UInt8(ascii: "\"") }.count == 4)
    }

    @Test(
        "a boundary with characters a header parameter cannot hold bare is quoted in Content-Type",
        arguments: [("simple boundary", true), ("a/b=c?d", true), ("(x),y:z", true), ("plain_-.+'b0", false)]
    )
    func boundaryQuoting(_ boundary: String, _ isQuoted: Bool) throws {
        let form = MultipartForm([.text("a", "1")], boundary: boundary)
        let (body, request) = try encoded(form)
        let parameter = isQuoted ? "\"\(boundary)\"" : boundary
        #expect(form.contentType == "multipart/form-data; boundary=\(parameter)")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/form-data; boundary=\(parameter)")
        // The delimiter lines use the boundary itself.
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("--\(boundary)\r\n"))
    }

    @Test("extra part headers follow Content-Disposition and Content-Type")
    func extraHeaders() throws {
        let form = MultipartForm([.text("a", "1").header("Content-Language", "fr")], boundary: "b")
        let (body, _) = try encoded(form)
        let expected = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Language: fr\r\n\r\n1\r\n--b--\r\n"
        #expect(body == Data(expected.utf8))
    }

    @Test("an empty form is the closing delimiter alone")
    func emptyForm() throws {
        let (body, _) = try encoded(MultipartForm(boundary: "b"))
        #expect(body == Data("--b--\r\n".utf8))
    }

    @Test("a random boundary is courier- and 32 hexadecimal digits, new for every form")
    func randomBoundary() throws {
        let first = MultipartForm().boundary
        let second = MultipartForm().boundary
        #expect(first != second)
        #expect(first.count == 40)
        #expect(first.hasPrefix("courier-"))
        #expect(first.dropFirst(8).allSatisfy { $0.isHexDigit })
    }

    @Test("the request's own Content-Type wins over the form's")
    func requestContentTypeWins() throws {
        let request = try Request<Data>(
            method: .post,
            target: .path("/upload"),
            headers: ["Content-Type": "multipart/mixed; boundary=b"],
            body: .multipart(MultipartForm(boundary: "b"))
        ).urlRequest(baseURL: exampleBaseURL)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/mixed; boundary=b")
    }

    @Test(
        "an invalid form fails with encodingFailed and nothing is sent",
        arguments: [
            ("boundary too long", MultipartForm(boundary: String(repeating: "a", count: 71))),
            ("boundary with a quote", MultipartForm(boundary: "a\"b")),
            ("boundary ending in a space", MultipartForm(boundary: "ab ")),
            ("boundary with the Kelvin sign", MultipartForm(boundary: "a\u{212A}b")),
            (
                "boundary of 70 characters but more bytes",
                MultipartForm(boundary: String(repeating: "\u{212A}", count: 70))
            ),
            ("empty boundary", MultipartForm(boundary: "")),
            ("CR LF in a header value", MultipartForm([.text("a", "1").header("X-A", "1\r\nX-B: 2")], boundary: "b")),
            (
                "Content-Disposition as an extra header",
                MultipartForm([.text("a", "1").header("Content-Disposition", "x")])
            ),
            ("Content-Type as an extra header", MultipartForm([.text("a", "1").header("content-type", "x")])),
            ("a content type with LF", MultipartForm([.data("a", Data(), contentType: "text/plain\nX: y")])),
            ("a missing file", MultipartForm([.file("f", at: URL(fileURLWithPath: "/nonexistent/courier-upload"))])),
            ("a directory", MultipartForm([.file("f", at: URL(fileURLWithPath: NSTemporaryDirectory()))])),
        ]
    )
    func invalidForm(_ label: String, _ form: MultipartForm) async throws {
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        let error = try await #require(throws: CourierError.self) {
            _ = try await client.send(Request<Data>(method: .post, target: .path("/upload"), body: .multipart(form)))
        }
        #expect(error.code == .encodingFailed, "\(label)")
        #expect(transport.requests.isEmpty, "\(label)")
    }

    @Test("the form's length is the sum of its parts, so a transport can send Content-Length")
    func knownLength() throws {
        let file = try TemporaryFile(size: 1000)
        defer { file.remove() }
        let form = MultipartForm([.text("a", "1"), .file("f", at: file.url)], boundary: "b")
        let request = try uploadRequest(.multipart(form), method: .post)
        let body = try readAsInputStream(request)
        #expect(uploadLength(of: request) == Int64(body.count))
    }
}
