#if HTTPTypes
import Courier
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("swift-http-types conversions (trait HTTPTypes)")
struct HTTPTypesTests {
    // MARK: URLRequest and HTTPRequest

    @Test("a URLRequest becomes an HTTPRequest with its method, scheme, authority, path, query and headers")
    func urlRequestToHTTPRequest() throws {
        var urlRequest = URLRequest(url: URL(string: "https://api.example.test:8443/v1/users?id=42&q=a%20b#top")!)
        urlRequest.httpMethod = "PATCH"
        urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        urlRequest.setValue("Bearer t1", forHTTPHeaderField: "Authorization")
        let request = try HTTPRequest(urlRequest)
        #expect(request.method == .patch)
        #expect(request.scheme == "https")
        #expect(request.authority == "api.example.test:8443")
        #expect(request.path == "/v1/users?id=42&q=a%20b")
        #expect(request.headerFields[.contentType] == "application/json")
        #expect(request.headerFields[.authorization] == "Bearer t1")
        #expect(request.headerFields.count == 2)
    }

    @Test("a URLRequest without an absolute URL, or with user info, cannot become an HTTPRequest")
    func urlRequestWithoutAbsoluteURL() throws {
        let relative = try #require(throws: CourierError.self) {
            try HTTPRequest(URLRequest(url: URL(string: "/v1/users")!))
        }
        #expect(relative.code == .invalidRequest)
        #expect(relative.message == "the URL is not absolute (it needs a scheme and a host)")

        let userInfo = try #require(throws: CourierError.self) {
            try HTTPRequest(URLRequest(url: URL(string: "https://user:pw@api.example.test/")!))
        }
        #expect(userInfo.code == .invalidRequest)
        #expect(userInfo.message.contains("user info"))
    }

    @Test("an invalid header name or value is an error that names it, never changed to fit")
    func invalidFields() throws {
        var badName = URLRequest(url: URL(string: "https://api.example.test/")!)
        badName.setValue("1", forHTTPHeaderField: "Bad Header")
        let nameError = try #require(throws: CourierError.self) { try HTTPRequest(badName) }
        #expect(nameError.code == .invalidRequest)
        #expect(nameError.message == #"the header name "Bad Header" is not a valid HTTP token (it contains a space)"#)

        let controlError = try #require(throws: CourierError.self) {
            try HTTPFields(["X-Bell": "ding\u{7}dong"] as HTTPHeaders)
        }
        #expect(controlError.code == .invalidRequest)
        #expect(controlError.message == #"the value of header "X-Bell" contains a control character (\u{7})"#)

        let spaceError = try #require(throws: CourierError.self) {
            try HTTPFields(["X-Padded": " value "] as HTTPHeaders)
        }
        #expect(spaceError.message == #"the value of header "X-Padded" starts or ends with a space or tab"#)
    }

    @Test("an HTTPRequest becomes a URLRequest; repeated fields are joined in order, Cookie with a semicolon")
    func httpRequestToURLRequest() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "application/json"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: .accept, value: "text/plain"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        let request = HTTPRequest(
            method: .post,
            scheme: "http",
            authority: "127.0.0.1:8080",
            path: "/items?sort=name",
            headerFields: fields
        )
        let urlRequest = try URLRequest(request, body: Data("{}".utf8))
        #expect(urlRequest.url?.absoluteString == "http://127.0.0.1:8080/items?sort=name")
        #expect(urlRequest.httpMethod == "POST")
        #expect(urlRequest.value(forHTTPHeaderField: "Accept") == "application/json, text/plain")
        #expect(urlRequest.value(forHTTPHeaderField: "Cookie") == "a=1; b=2")
        #expect(urlRequest.httpBody == Data("{}".utf8))
        // And back: the joined values arrive as one field each.
        let back = try HTTPRequest(urlRequest)
        #expect(back.headerFields[values: .accept] == ["application/json, text/plain"])
        #expect(back.path == "/items?sort=name")
    }

    @Test("an HTTPRequest without a scheme or authority, or an extended CONNECT, cannot become a URLRequest")
    func httpRequestWithoutURL() throws {
        let noAuthority = HTTPRequest(method: .get, scheme: "https", authority: nil, path: "/x")
        let error = try #require(throws: CourierError.self) { try URLRequest(noAuthority) }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("no absolute URL"))

        var connect = HTTPRequest(method: .connect, scheme: "https", authority: "chat.example.test", path: "/ws")
        connect.extendedConnectProtocol = "websocket"
        let connectError = try #require(throws: CourierError.self) { try URLRequest(connect) }
        #expect(connectError.message.contains("extended CONNECT"))
    }

    @Test(
        "an HTTPRequest's path or authority cannot move the URLRequest to another host, port or user",
        arguments: [
            ("api.example.test", "@attacker.example/steal"), ("api.example.test", "x/y"),
            ("api.example.test", ":8443/x"), ("api.example.test", "?q=1"), ("api.example.test@attacker.example", "/x"),
            ("attacker.example/x", "/y"), ("attacker.example#", "/y"), ("attacker.example?", "/y"),
            ("attacker.example\\api.example.test", "/y"),
        ]
    )
    func pathCannotMoveTheAuthority(authority: String, path: String) throws {
        let request = HTTPRequest(
            method: .get,
            scheme: "https",
            authority: authority,
            path: path,
            headerFields: [.authorization: "Bearer secret"]
        )
        let error = try #require(throws: CourierError.self) { try URLRequest(request) }
        #expect(error.code == .invalidRequest)
    }

    @Test(
        "an HTTPRequest's scheme cannot move the URLRequest to another host either",
        arguments: [
            "https://attacker.example/#", "https://attacker.example?", "https://attacker.example/", "1https", "",
        ]
    )
    func schemeCannotMoveTheAuthority(scheme: String) throws {
        let request = HTTPRequest(
            method: .get,
            scheme: scheme,
            authority: "api.example.test",
            path: "/x",
            headerFields: [.authorization: "Bearer secret"]
        )
        let error = try #require(throws: CourierError.self) { try URLRequest(request) }
        #expect(error.code == .invalidRequest)
        // A scheme of letters, digits, "+", "-" and "." after a letter still converts.
        let plain = HTTPRequest(method: .get, scheme: "coap+tcp", authority: "api.example.test", path: "/x")
        #expect(try URLRequest(plain).url?.host == "api.example.test")
    }

    @Test(
        "an HTTPRequest with a port, an IPv6 host, a query or no path keeps its authority",
        arguments: [
            ("api.example.test:8443", "/x?y=1", "api.example.test", 8443),
            ("[::1]:8080", "/x", "::1", 8080), ("127.0.0.1", "", "127.0.0.1", nil),
        ] as [(String, String, String, Int?)]
    )
    func authorityKept(authority: String, path: String, host: String, port: Int?) throws {
        let request = try URLRequest(HTTPRequest(method: .get, scheme: "https", authority: authority, path: path))
        let url = try #require(request.url)
        #expect(url.host(percentEncoded: false)?.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) == host)
        #expect(url.port == port)
        #expect(url.user == nil)
    }

    // MARK: HTTPHeaders and HTTPFields

    @Test("HTTPHeaders and HTTPFields convert both ways keeping every field, repeated ones, and their order")
    func headersRoundTrip() throws {
        var headers = HTTPHeaders()
        headers.add(name: "X-B", value: "1")
        headers.add(name: "x-a", value: "2")
        headers.add(name: "X-B", value: "3")
        let fields = try HTTPFields(headers)
        #expect(fields.map(\.name.rawName) == ["X-B", "x-a", "X-B"])
        #expect(fields.map(\.value) == ["1", "2", "3"])
        #expect(HTTPHeaders(fields) == headers)
    }

    // MARK: HTTPURLResponse and HTTPResponse

    @Test("an HTTPURLResponse becomes an HTTPResponse with its status and headers")
    func urlResponseToHTTPResponse() throws {
        let url = URL(string: "https://api.example.test/")!
        let urlResponse = HTTPURLResponse(
            url: url,
            statusCode: 429,
            httpVersion: "HTTP/1.1",
            headerFields: ["Retry-After": "3", "Content-Type": "application/json"]
        )!
        let response = try HTTPResponse(urlResponse)
        #expect(response.status.code == 429)
        #expect(response.headerFields[.retryAfter] == "3")
        #expect(response.headerFields[.contentType] == "application/json")
        #expect(response.headerFields.count == 2)
    }

    @Test("an HTTPURLResponse with a status HTTP has no code for, or an invalid header, is an error")
    func invalidURLResponse() throws {
        let url = URL(string: "https://api.example.test/")!
        let status = try #require(throws: CourierError.self) {
            try HTTPResponse(HTTPURLResponse(url: url, statusCode: 42, httpVersion: "HTTP/1.1", headerFields: nil)!)
        }
        #expect(status.code == .nonHTTPResponse)
        #expect(status.message == "the status 42 is not a three-digit HTTP status code")

        let header = try #require(throws: CourierError.self) {
            try HTTPResponse(
                HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Bad:Name": "1"])!
            )
        }
        #expect(header.code == .nonHTTPResponse)
        #expect(header.message.contains(#""Bad:Name""#))
    }

    @Test("an HTTPResponse becomes an HTTPURLResponse; repeated fields (in any case) are joined in order")
    func httpResponseToURLResponse() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .init("Vary")!, value: "Accept"))
        fields.append(HTTPField(name: .init("vary")!, value: "Cookie"))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        let url = URL(string: "https://api.example.test/x")!
        let urlResponse = HTTPURLResponse(HTTPResponse(status: .created, headerFields: fields), url: url)
        #expect(urlResponse.statusCode == 201)
        #expect(urlResponse.url == url)
        #expect(urlResponse.value(forHTTPHeaderField: "Vary") == "Accept, Cookie")
        #expect(urlResponse.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(urlResponse.allHeaderFields.count == 2)
    }

    // MARK: Sizes

    @Test("an HTTPRequest with 20,000 fields becomes a URLRequest in one pass, repeats joined", .timeLimit(.minutes(1)))
    func manyRequestFields() throws {
        // Looking each field up in the URLRequest (which goes through every field, lowercasing each name) cost
        // the square of their number: 4 × 10^8 comparisons here.
        var fields = HTTPFields()
        for index in 0..<20_000 {
            fields.append(HTTPField(name: HTTPField.Name("x\(index)")!, value: "v"))
        }
        fields.append(HTTPField(name: HTTPField.Name("X0")!, value: "w"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: HTTPField.Name("COOKIE")!, value: "b=2"))
        let request = try URLRequest(
            HTTPRequest(method: .get, scheme: "https", authority: "api.example.test", path: "/", headerFields: fields)
        )
        #expect(request.allHTTPHeaderFields?.count == 20_001)
        #expect(request.value(forHTTPHeaderField: "x0") == "v, w")
        #expect(request.value(forHTTPHeaderField: "Cookie") == "a=1; b=2")
        #expect(request.value(forHTTPHeaderField: "x19999") == "v")
    }

    @Test("more header fields than an HTTPFields holds are refused, not a stopped process")
    func fieldsOverCapacity() throws {
        let headers = HTTPHeaders((0...65_535).map { HTTPHeaders.Field(name: "x\($0)", value: "v") })
        let error = try #require(throws: CourierError.self) { try HTTPFields(headers) }
        #expect(error.code == .invalidRequest)
        #expect(error.message == "the request has 65536 header fields, more than an HTTPFields holds (65535)")
    }

    @Test("a response with more than 1,000 header fields is refused, as the transports refuse it")
    func responseFieldLimit() throws {
        let url = URL(string: "https://api.example.test/x")!
        func response(fields count: Int) -> HTTPURLResponse {
            let fields = Dictionary(uniqueKeysWithValues: (0..<count).map { ("x\($0)", "v") })
            return HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
        }
        #expect(try HTTPResponse(response(fields: 1_000)).headerFields.count == 1_000)
        let error = try #require(throws: CourierError.self) { try HTTPResponse(response(fields: 1_001)) }
        #expect(error.code == .nonHTTPResponse)
        #expect(error.message == "the response has 1001 header fields, more than Courier accepts (1000)")
    }
}
#endif
