import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One way a secret could end up in an error, and the secret itself.
struct SecretCase: Sendable, CustomTestStringConvertible {
    let name: String
    let secret: String
    /// Produces the error the way a user would meet it.
    let makeError: @Sendable () async -> CourierError?

    var testDescription: String { name }
}

extension SecretCase {
    /// An error from a client whose transport answers `reply` to a typed GET.
    static func response(_ name: String, secret: String, _ reply: MockResponse) -> SecretCase {
        SecretCase(name: name, secret: secret) {
            let client = Client(baseURL: exampleBaseURL, transport: MockTransport(reply))
            do {
                let _: User = try await client.send(.get("/users/1"))
                return nil
            } catch {
                return error as? CourierError
            }
        }
    }

    /// An error from a client whose transport answers `status` with the response header `header: value`, which
    /// holds `secret`.
    static func responseHeader(_ header: String, _ value: String, secret: String, status: Int) -> SecretCase {
        .response("\(header) response header", secret: secret, .status(status, headers: [header: value]))
    }

    /// An error from a client whose transport throws `failure` for a request to `url`.
    static func transportFailure(
        _ name: String,
        secret: String,
        url: String,
        _ failure: any Error & Sendable
    )
        -> SecretCase
    {
        SecretCase(name: name, secret: secret) {
            let client = Client(transport: MockTransport(.failure(failure)))
            do {
                _ = try await client.send(URLRequest(url: URL(string: url)!))
                return nil
            } catch {
                return error as? CourierError
            }
        }
    }

    static let all: [SecretCase] = [
        .responseHeader("Authorization", "Bearer hdr-auth-5ecret", secret: "hdr-auth-5ecret", status: 401),
        .responseHeader("Cookie", "sid=cookie-5ecret", secret: "cookie-5ecret", status: 400),
        .responseHeader(
            "Set-Cookie",
            "session=set-cookie-5ecret; HttpOnly; Secure",
            secret: "set-cookie-5ecret",
            status: 403
        ),
        // In lowercase, as a server may send it.
        .responseHeader("proxy-authorization", "Basic cHJveHk6NWVjcmV0", secret: "cHJveHk6NWVjcmV0", status: 407),
        .responseHeader("X-API-Key", "key-5ecret", secret: "key-5ecret", status: 500),
        .response(
            "bearer token in a response body",
            secret: "body-bearer-5ecret",
            .status(401, body: "invalid credentials: Bearer body-bearer-5ecret was revoked")
        ),
        .response(
            "token field in a JSON response body",
            secret: "json-access-5ecret",
            .json(#"{"access_token":"json-access-5ecret","refresh_token":"json-refresh-5ecret"}"#, status: 400)
        ),
        .response(
            "token parameter in a form response body",
            secret: "form-5ecret",
            .status(400, body: "error=invalid_grant&access_token=form-5ecret")
        ),
        .response(
            "token in the Location of a response",
            secret: "loc-5ecret",
            .status(500, headers: ["Location": "https://api.example.test/cb?access_token=loc-5ecret"])
        ),
        .transportFailure(
            "bearer token in an underlying error",
            secret: "underlying-5ecret",
            url: "https://api.example.test/x",
            UnderlyingFailure(text: "proxy said: Authorization: Bearer underlying-5ecret")
        ),
        .transportFailure(
            "URL user-info inside an underlying URLError",
            secret: "urlerror-pa55",
            url: "https://api.example.test/x",
            URLError(
                .cannotConnectToHost,
                userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://admin:urlerror-pa55@api.example.test/x")!]
            )
        ),
        .transportFailure(
            "user-info in the request URL",
            secret: "url-pa55word",
            url: "https://admin:url-pa55word@api.example.test/x",
            URLError(.timedOut)
        ),
        .transportFailure(
            "token query parameter in the request URL",
            secret: "query-5ecret",
            url: "https://api.example.test/x?page=2&access_token=query-5ecret&api_key=query-5ecret",
            URLError(.timedOut)
        ),
        .transportFailure(
            "token query parameter inside an underlying URLError",
            secret: "failing-url-5ecret",
            url: "https://api.example.test/x",
            URLError(
                .timedOut,
                userInfo: [
                    NSURLErrorFailingURLErrorKey: URL(string: "https://api.example.test/x?token=failing-url-5ecret")!
                ]
            )
        ),
        .transportFailure(
            "token in the request URL's fragment",
            secret: "fragment-5ecret",
            url: "https://api.example.test/callback#state=xyz&access_token=fragment-5ecret",
            URLError(.timedOut)
        ),
        SecretCase(name: "bearer token in a middleware's own message", secret: "message-5ecret") {
            CourierError(.authenticationRejected, message: "rejected Bearer message-5ecret")
        },
    ]
}

private struct UnderlyingFailure: Error, CustomStringConvertible {
    let text: String
    var description: String { text }
}

@Suite("No secret in any description")
struct RedactionTests {
    @Test(
        "description, debugDescription, localizedDescription and String(reflecting:) hide the secret",
        arguments: SecretCase.all
    )
    func noSecret(_ secretCase: SecretCase) async throws {
        let error = try #require(await secretCase.makeError())
        let texts = [
            "description": error.description,
            "debugDescription": error.debugDescription,
            "localizedDescription": (error as any Error).localizedDescription,
            "String(reflecting:)": String(reflecting: error),
            "String(describing:)": String(describing: error),
            "interpolation": "\(error)",
        ]
        for (kind, text) in texts {
            #expect(!text.contains(secretCase.secret), "\(kind) leaks the secret: \(text)")
        }
        // The error still says something useful.
        #expect(error.description.contains("CourierError."))
    }

    @Test("sensitive headers are replaced, others kept")
    func headers() {
        let redacted = Redaction.redactedHeaders([
            "Authorization": "Bearer abc", "COOKIE": "a=b", "Set-Cookie": "c=d", "Proxy-Authorization": "Basic x",
            "Content-Type": "application/json",
        ])
        #expect(redacted["Authorization"] == Redaction.placeholder)
        #expect(redacted["COOKIE"] == Redaction.placeholder)
        #expect(redacted["Set-Cookie"] == Redaction.placeholder)
        #expect(redacted["Proxy-Authorization"] == Redaction.placeholder)
        #expect(redacted["Content-Type"] == "application/json")
    }

    @Test("a header registered with CredentialHeaders is redacted in headers and in free text, in any case")
    func registeredCredentialHeader() {
        // A name of its own on each run: the list is process-wide and only grows.
        let name = "X-Partner-Ident-\(UInt32.random(in: 0...UInt32.max))"
        #expect(!Redaction.isSensitiveHeader(name))
        CredentialHeaders.register(name)
        #expect(Redaction.isSensitiveHeader(name.lowercased()))
        #expect(CredentialHeaders.contains(name.uppercased()))
        #expect(CredentialHeaders.names.contains(name.lowercased()))
        #expect(Redaction.sensitiveHeaderNames.contains(name.lowercased()))
        let redacted = Redaction.redactedHeaders([name: "p-77", "X-Request-Id": "r-1"])
        #expect(redacted[name] == Redaction.placeholder)
        #expect(redacted["X-Request-Id"] == "r-1")
        let text = Redaction.redactedText("sent \(name): p-77\nnext line")
        #expect(!text.contains("p-77"))
        #expect(text.contains("next line"))
    }

    @Test("the standard credential headers and names with a credential fragment are credential headers")
    func credentialHeaderList() {
        for name in ["Authorization", "Cookie", "Proxy-Authorization", "X-API-Key", "api-key", "X-Auth-Token"] {
            #expect(CredentialHeaders.contains(name), "\(name)")
        }
        #expect(CredentialHeaders.contains("X-Session-Token"))
        #expect(!CredentialHeaders.contains("Accept"))
        #expect(!CredentialHeaders.contains("X-Request-Id"))
    }

    @Test("the message of a relative path without a base URL hides a token in the path")
    func relativePathMessage() async throws {
        let client = Client(transport: MockTransport.ok)
        let error = await #expect(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/callback?access_token=path-5ecret"))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("path-5ecret") == false)
        #expect(error?.message.contains("/callback") == true)
    }

    @Test("a URL keeps its host, path and harmless parameters")
    func url() {
        let url = URL(string: "https://user:pw@api.example.test/v1/items?page=2&token=abc#state=s1&code=c0de")!
        let redacted = Redaction.redactedURL(url)
        #expect(!redacted.contains("pw"))
        #expect(!redacted.contains("abc"))
        #expect(!redacted.contains("c0de"))
        #expect(redacted.contains("api.example.test/v1/items"))
        #expect(redacted.contains("page=2"))
        #expect(redacted.contains("#state=s1&code=REDACTED"))
    }

    @Test(
        "text without secrets is returned unchanged",
        arguments: [
            "the status 404 is not acceptable", "application/json; charset=utf-8", "Tue, 01 Oct 2024 10:00:00 GMT",
            "key \"name\" not found", "a=1&b=2", "",
        ]
    )
    func harmlessText(text: String) {
        #expect(Redaction.redactedText(text) == text)
    }

    @Test(
        "secrets in free text are removed whatever their letter case",
        arguments: [
            ("AUTHORIZATION: BASIC QWxhZGRpbjpvcGVu", "QWxhZGRpbjpvcGVu"),
            ("proxy-authorization=Digest c2VjcmV0Cg", "c2VjcmV0Cg"),
            ("Set-Cookie: SID=AbC123xyz", "AbC123xyz"),
            ("sent BeArEr eyJhbGciOi.J9.sig to the server", "eyJhbGciOi.J9.sig"),
            ("HTTPS://Admin:Pa55@Host.example/x", "Pa55"),
            (#"{"Client_Secret": "s3cr3t-value", "id": 1}"#, "s3cr3t-value"),
            ("grant_type=refresh&REFRESH_TOKEN=r3fr3sh", "r3fr3sh"),
            ("curl https://h.example/cb?Code=0a1b2c&state=ok", "0a1b2c"),
        ]
    )
    func freeText(text: String, secret: String) {
        let redacted = Redaction.redactedText(text)
        #expect(!redacted.contains(secret), "\(redacted)")
        #expect(redacted.contains(Redaction.placeholder) || redacted.contains("REDACTED"))
    }

    @Test("redaction is safe from many tasks at once")
    func concurrent() async {
        let results = await withTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask { Redaction.redactedText("Authorization: Bearer t0ken-\(index)") }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { !$0.contains("t0ken") })
    }
}
