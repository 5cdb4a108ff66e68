import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every text a user can get out of an error: descriptions, reflection, `dump`, and the Mirror's descendants.
///
/// With `aliases: false`, the renderings that are the same text as another by construction
/// (`localizedDescription`, `String(reflecting:)` and interpolation; `CourierErrorTests` checks they are) are
/// left out, and with `reflection: false`, `dump` and the Mirror, for speed.
func renderings(of error: CourierError, aliases: Bool = true, reflection: Bool = true) -> [String: String] {
    var texts = [
        "description": error.description,
        "debugDescription": error.debugDescription,
        "message": error.message,
        "bodyPreview": error.bodyPreview ?? "",
    ]
    if reflection {
        var dumped = ""
        dump(error, to: &dumped)
        var descendants: [String] = []
        func walk(_ mirror: Mirror, depth: Int) {
            guard depth < 12 else { return }
            for child in mirror.children {
                descendants.append("\(child.label ?? "_"): \(child.value)")
                walk(Mirror(reflecting: child.value), depth: depth + 1)
            }
        }
        walk(Mirror(reflecting: error), depth: 0)
        texts["dump"] = dumped
        texts["Mirror descendants"] = descendants.joined(separator: "\n")
    }
    if aliases {
        texts["localizedDescription"] = (error as any Error).localizedDescription
        texts["String(reflecting:)"] = String(reflecting: error)
        texts["interpolation"] = "\(error)"
    }
    return texts
}

/// The kinds of rendering of `error` that contain `secret`.
func leaks(of secret: String, in error: CourierError) -> [String] {
    renderings(of: error).filter { $0.value.contains(secret) }.map(\.key).sorted()
}

/// Regression tests for issue 13, items 4 and 5: secrets that got through redaction, and a fact that did not.
@Suite("Redaction leaks (issue 13)")
struct RedactionLeakTests {
    // MARK: 4a: a token parameter nested inside another parameter's value

    @Test(
        "a token parameter nested in another parameter's value is redacted from URLs",
        arguments: [
            "https://api.example.test/login?url=%2Fcb%3Faccess_token%3DNESTED-5ECRET-a&page=2",
            "https://api.example.test/login?url=%252Fcb%253Faccess_token%253DNESTED-5ECRET-a&page=2",
            "https://api.example.test/login?next=https%3A%2F%2Fh.example%2Fcb%3Fstate%3D1%26token%3DNESTED-5ECRET-a",
            "https://api.example.test/callback?page=2#next=%2Fcb%3Fcode%3DNESTED-5ECRET-a",
            "https://api.example.test/login?url=access_token%3DNESTED-5ECRET-a&page=2",
        ]
    )
    func nestedParameterInURL(_ string: String) throws {
        let url = try #require(URL(string: string))
        let redacted = Redaction.redactedURL(url)
        #expect(!redacted.contains("NESTED-5ECRET-a"), "\(redacted)")
        #expect(redacted.contains("api.example.test"))
        #expect(redacted.contains("page=2") || !string.contains("page=2"))
    }

    @Test(
        "a token parameter nested in a parameter's value is redacted from free text and form bodies",
        arguments: [
            "redirecting to /cb?next=%2Fx%3Faccess_token%3DNESTED-5ECRET-b",
            "grant_type=authorization_code&redirect_uri=https%3A%2F%2Fh.example%2Fcb%3Fcode%3DNESTED-5ECRET-b",
            "location: /cb#state=1&next=%2Fx%253Frefresh_token%253DNESTED-5ECRET-b",
        ]
    )
    func nestedParameterInText(_ text: String) {
        let redacted = Redaction.redactedText(text)
        #expect(!redacted.contains("NESTED-5ECRET-b"), "\(redacted)")
        let preview = Redaction.bodyPreview(Data(text.utf8))
        #expect(!preview.contains("NESTED-5ECRET-b"), "\(preview)")
    }

    @Test("a nested token parameter is kept out of an error's descriptions and the log line")
    func nestedParameterInErrorAndLog() async throws {
        let url = try #require(
            URL(string: "https://api.example.test/login?url=%2Fcb%3Faccess_token%3DNESTED-5ECRET-c")
        )
        let failure = URLError(.cannotConnectToHost, userInfo: [NSURLErrorFailingURLErrorKey: url])
        let records = Locked<[LogRecord]>([])
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(.failure(failure)),
            middleware: [
                .logging(to: LogSink { record in records.withLock { $0.append(record) } }, includesHeaders: true)
            ]
        )
        let error = try #require(
            await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        )
        #expect(leaks(of: "NESTED-5ECRET-c", in: error) == [])
        let record = try #require(records.value.first)
        #expect(!record.description.contains("NESTED-5ECRET-c"), "\(record.description)")
        #expect(!record.metadata.values.contains { $0.contains("NESTED-5ECRET-c") })
    }

    // MARK: 4b: a token quoted in the underlying error of a failed refresh

    @Test(
        "a refreshFailed error never shows the replaced token, even when the refresh's error quotes it",
        .timeLimit(.minutes(1))
    )
    func refreshFailureQuotingTheToken() async throws {
        let token = "rt-QuotedInError-7fq2Lx9"
        let refresher = TokenRefresher(token: .init(token)) { replaced in
            // A plain quote of the value, in no shape the pattern rules know.
            throw URLError(
                .userAuthenticationRequired,
                userInfo: [NSLocalizedDescriptionKey: "the identity provider refused '\(replaced.value)'"]
            )
        }
        let error = try #require(await #expect(throws: CourierError.self) { try await refresher.refresh() })
        #expect(error.code == .refreshFailed)
        #expect(leaks(of: token, in: error) == [])
        // The rest of the underlying error's text is still there.
        #expect(error.description.contains("the identity provider refused"))
    }

    @Test("a token set with setToken is scrubbed from a later refresh failure's text", .timeLimit(.minutes(1)))
    func setTokenIsScrubbed() async throws {
        let refresher = TokenRefresher(token: .init("first-token-value-1")) { replaced in
            throw QuotingError(description: "no refresh for \(replaced.value)!")
        }
        await refresher.setToken(.init("second-token-value-2"))
        let error = try #require(await #expect(throws: CourierError.self) { try await refresher.refresh() })
        #expect(leaks(of: "second-token-value-2", in: error) == [])
        #expect(error.description.contains("no refresh for"))
    }

    @Test("a refreshed token is scrubbed from the next refresh's failure", .timeLimit(.minutes(1)))
    func refreshedTokenIsScrubbed() async throws {
        let calls = Locked(0)
        let refresher = TokenRefresher(token: .init("initial-token-value")) { replaced in
            let call = calls.increment()
            if call == 1 { return .init("refreshed-token-9Zq") }
            throw QuotingError(description: "cannot replace \(replaced.value)")
        }
        try await refresher.refresh()
        let error = try #require(await #expect(throws: CourierError.self) { try await refresher.refresh() })
        #expect(leaks(of: "refreshed-token-9Zq", in: error) == [])
    }

    /// Sends a request through `middleware` to a transport that fails with an error quoting the value of the
    /// `header` it received, as `quote` words it; returns the error that reaches the caller.
    private func error(
        quotingHeader header: String,
        through middleware: Middleware,
        _ quote: @escaping @Sendable (String) -> String
    ) async throws -> CourierError {
        let transport = MockTransport { request in
            throw QuotingError(description: quote(request.header(header) ?? ""))
        }
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: [middleware])
        return try #require(
            await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: exampleBaseURL)) }
        )
    }

    @Test("the token of .authenticating(token:) is scrubbed from an underlying error that quotes it")
    func staticTokenIsScrubbed() async throws {
        let token = "static-api-key-Hq83nd"
        let middleware = Middleware.authenticating(token: token, scheme: .header("X-Key"))
        let error = try await error(quotingHeader: "X-Key", through: middleware) { "proxy refused key \($0)" }
        #expect(leaks(of: token, in: error) == [])
        #expect(error.description.contains("proxy refused key"))
    }

    @Test("a token from .authenticating(tokenProvider:) is scrubbed from an underlying error that quotes it")
    func providedTokenIsScrubbed() async throws {
        let token = "provided-token-Vn27xk"
        let error = try await error(quotingHeader: "Authorization", through: .authenticating { token }) {
            "upstream said: bad credential <\($0.dropFirst(7))>"
        }
        #expect(leaks(of: token, in: error) == [])
    }

    // MARK: 4c: a long JSON token cut by the preview

    @Test("a long token in a JSON body is redacted before the preview is cut", arguments: [300, 2_000, 70_000])
    func longJSONToken(length: Int) {
        let token = String(repeating: "Tk0", count: length / 3)
        let bodies = [
            #"{"access_token":""# + token + #"","token_type":"bearer"}"#,
            #"{"data": {"refresh_token" : ""# + token + #""}}"#,
            "grant_type=refresh_token&refresh_token=" + token,
        ]
        for body in bodies {
            let error = CourierError(.unacceptableStatus, message: "m", body: Data(body.utf8))
            let preview = error.bodyPreview ?? ""
            #expect(!preview.contains("Tk0Tk0"), "\(preview.prefix(80))")
            #expect(!error.debugDescription.contains("Tk0Tk0"))
            #expect(!Redaction.bodyPreview(Data(body.utf8)).contains("Tk0Tk0"))
        }
    }

    // MARK: 4d: dump and Mirror

    @Test("dump and Mirror of a transport error show no user-info and no token parameter")
    func dumpOfTransportError() async throws {
        let failing = try #require(
            URL(string: "https://admin:dump-pa55word@api.example.test/x?access_token=dump-5ecret-token")
        )
        let failure = URLError(.cannotConnectToHost, userInfo: [NSURLErrorFailingURLErrorKey: failing])
        let client = Client(baseURL: exampleBaseURL, transport: MockTransport(.failure(failure)))
        let error = try #require(
            await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: failing)) }
        )
        #expect(leaks(of: "dump-pa55word", in: error) == [])
        #expect(leaks(of: "dump-5ecret-token", in: error) == [])
        // The Mirror still tells what happened.
        let labels = Mirror(reflecting: error).children.compactMap(\.label)
        #expect(labels.contains("code"))
        #expect(labels.contains("underlying"))
        #expect(!labels.contains("responseBody"))
        var dumped = ""
        dump(error, to: &dumped)
        #expect(dumped.contains("transport"))
        #expect(dumped.contains("api.example.test"))
    }

    @Test("dump of a token or a refresher never shows the token's value")
    func dumpOfToken() {
        let token = TokenRefresher.Token("dump-token-value-x1", expiresIn: .seconds(60))
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains("dump-token-value-x1"), "\(dumped)")
        #expect(String(reflecting: token).contains("dump-token-value-x1") == false)
        let refresher = TokenRefresher(token: token) { _ in token }
        var dumpedRefresher = ""
        dump(refresher, to: &dumpedRefresher)
        #expect(!dumpedRefresher.contains("dump-token-value-x1"), "\(dumpedRefresher)")
    }

    // MARK: 5: over-redaction of NSError's Code=

    @Test("an NSError's Code= survives redaction; an OAuth code parameter does not")
    func nsErrorCode() async throws {
        let text =
            #"Error Domain=NSURLErrorDomain Code=-1004 "(null)" UserInfo={NSErrorFailingURLKey=https://h.example/cb?code=0auth-c0de}"#
        let redacted = Redaction.redactedText(text)
        #expect(redacted.contains("Code=-1004"), "\(redacted)")
        #expect(!redacted.contains("0auth-c0de"), "\(redacted)")
        #expect(Redaction.redactedText("curl https://h.example/cb?Code=0a1b2c&state=ok").contains("0a1b2c") == false)
        #expect(Redaction.redactedText("grant_type=authorization_code&code=0a1b2c3d").contains("0a1b2c3d") == false)

        let client = Client(baseURL: exampleBaseURL, transport: MockTransport(.failure(URLError(.cannotConnectToHost))))
        let error = try #require(
            await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: exampleBaseURL)) }
        )
        #expect(error.description.contains("Code=-1004"), "\(error.description)")
    }

    // MARK: The same class of leak, elsewhere

    @Test(
        "secrets in other shapes of free text are redacted",
        arguments: [
            (#"{"error":"{\"access_token\":\"esc-5ecret-1\"}"}"#, "esc-5ecret-1"),
            (#"{ "refresh_token" :   "ws-5ecret-2" }"#, "ws-5ecret-2"),
            (#"{"password":"with \"quotes\" 5ecret-3"}"#, "5ecret-3"),
            (#"AuthError(token: "struct-5ecret-4", status: 401)"#, "struct-5ecret-4"),
            (#"Credentials(password: Optional("opt-5ecret-5"))"#, "opt-5ecret-5"),
            ("retry with X-Session-Token: hdr-5ecret-6 now", "hdr-5ecret-6"),
            ("https://b.example/o?X-Amz-Signature=s3-5ecret-7&X-Amz-Expires=60", "s3-5ecret-7"),
            ("auth_token=snake-5ecret-8&page=1", "snake-5ecret-8"),
            (#"token="quoted-5ecret-9""#, "quoted-5ecret-9"),
            ("{'access_token': 'py-5ecret-10'}", "py-5ecret-10"),
            ("https%3A%2F%2Fadmin%3Aenc-5ecret-11%40h.example%2Fx", "enc-5ecret-11"),
            ("authorization=Basic YWxhZGRpbjpvcGVu", "YWxhZGRpbjpvcGVu"),
        ]
    )
    func otherShapes(text: String, secret: String) {
        let redacted = Redaction.redactedText(text)
        #expect(!redacted.contains(secret), "\(redacted)")
    }

    @Test("headers whose names say they carry a credential are redacted")
    func credentialHeaderNames() {
        let redacted = Redaction.redactedHeaders([
            "X-Access-Token": "a-5ecret", "X-Session-Token": "s-5ecret", "Api-Token": "t-5ecret",
            "X-Amz-Security-Token": "amz-5ecret", "Content-Type": "text/plain",
        ])
        #expect(!redacted.values.contains { $0.contains("5ecret") }, "\(redacted)")
        #expect(redacted["Content-Type"] == "text/plain")
    }

    @Test("a retry event's description does not show the failing URL's token")
    func retryEventDescription() {
        let failing = URL(string: "https://u:retry-pa55@h.example/x?token=retry-5ecret")!
        let reason = RetryEvent.Reason.error(URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: failing]))
        #expect(!reason.description.contains("retry-5ecret"), "\(reason.description)")
        #expect(!reason.description.contains("retry-pa55"))
    }
}

/// The promises of `Redaction`'s documentation that the leak tests above do not already show.
@Suite("Redaction's documented rules")
struct RedactionRuleTests {
    @Test(
        "outside a URL, code, key, sig and auth count only in lowercase or uppercase; elsewhere any case",
        arguments: [
            ("Error Domain=NSURLErrorDomain Code=-1004", "-1004", true),
            ("Key=abc123 in a printed structure", "abc123", true),
            ("form: code=abc123&state=1", "abc123", false),
            ("env: CODE=abc123", "abc123", false),
            ("https://h.example/cb?Code=abc123", "abc123", false),
            ("https://h.example/cb#x=1&Sig=abc123", "abc123", false),
            ("Password=abc123", "abc123", false),
        ]
    )
    func ambiguousNames(text: String, value: String, kept: Bool) {
        let redacted = Redaction.redactedText(text)
        #expect(redacted.contains(value) == kept, "\(redacted)")
    }

    @Test("names containing a sensitive fragment are sensitive, as headers and as parameters")
    func fragments() {
        #expect(Redaction.isSensitiveHeader("X-Session-Token"))
        #expect(Redaction.isSensitiveHeader("x-goog-api-key"))
        #expect(Redaction.isSensitiveHeader("Set-Cookie"))
        #expect(!Redaction.isSensitiveHeader("WWW-Authenticate"))
        #expect(!Redaction.isSensitiveHeader("Content-Type"))
        #expect(Redaction.isSensitiveParameter("auth_token"))
        #expect(Redaction.isSensitiveParameter("X-Amz-Signature"))
        #expect(Redaction.isSensitiveParameter("CODE"))
        #expect(!Redaction.isSensitiveParameter("page"))
        #expect(!Redaction.redactedText(#"{"refreshToken":"camel-5ecret"}"#).contains("camel-5ecret"))
    }

    @Test("a printed value's sensitive field is redacted quoted or not; numbers and nil are kept")
    func printedFields() {
        #expect(
            Redaction.redactedText("Config(secret: abc123xyz, retries: 3)") == "Config(secret: <redacted>, retries: 3)"
        )
        #expect(Redaction.redactedText("Stats(tokenCount: 42, session: nil)") == "Stats(tokenCount: 42, session: nil)")
    }

    @Test("a value cut off by the end of the text is replaced up to the end")
    func cutOff() {
        #expect(Redaction.redactedText(#"{"access_token":"abc123-cut-of"#) == #"{"access_token":"<redacted>"#)
        #expect(Redaction.redactedText("x=1&refresh_token=abc123-cut") == "x=1&refresh_token=<redacted>")
    }

    @Test("in a URL, a sensitive parameter's value runs to the next & or #, and the rest is kept as written")
    func urlValues() throws {
        let url = try #require(URL(string: "https://h.example/p;v=1?token=a,b;c/d?e&page=2#frag"))
        #expect(Redaction.redactedURL(url) == "https://h.example/p;v=1?token=REDACTED&page=2#frag")
    }

    @Test(
        "a sensitive value with an encoded space, & or # after a literal = is redacted whole; a nested one still ends"
    )
    func encodedSeparatorsInSensitiveValue() throws {
        let encoded = try #require(URL(string: "https://h.example/cb?password=p%26ssw0rd-TAIL&page=2"))
        #expect(Redaction.redactedURL(encoded) == "https://h.example/cb?password=REDACTED&page=2")
        let spaced = try #require(URL(string: "https://h.example/login?password=correct%20horse%20staple&page=2"))
        #expect(Redaction.redactedURL(spaced) == "https://h.example/login?password=REDACTED&page=2")
        #expect(!Redaction.redactedText("Location: https://h.example/cb?client_secret=abc%23def-TAIL").contains("TAIL"))
        #expect(!Redaction.bodyPreview(Data("grant_type=password&password=correct%20horse".utf8)).contains("horse"))
        // A parameter inside another's encoded value ends at that value's encoded separator, as before.
        let nested = try #require(URL(string: "https://h.example/p?next=%2Fcb%3Faccess_token%3DX1%26page%3D2&q=1"))
        #expect(
            Redaction.redactedURL(nested) == "https://h.example/p?next=%2Fcb%3Faccess_token%3DREDACTED%26page%3D2&q=1"
        )
    }

    @Test(
        "a sensitive query value written by Courier's own encoder is redacted whole, whatever it holds",
        arguments: 0..<8
    )
    func encodedQueryValuesModel(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 31)
        let alphabet = Array("abcXYZ0189 &#=+%/?:;,'\"@!$()*~._-")
        for _ in 0..<100 {
            let length = 1 + Int(random.next() % 24)
            let secret = String((0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let request = try Request<Data>.get("/login", query: ["password": secret, "page": "2"])
                .urlRequest(baseURL: URL(string: "https://h.example")!)
            let url = try #require(request.url)
            let redacted = Redaction.redactedURL(url)
            #expect(
                redacted.contains("password=REDACTED&") || redacted.hasSuffix("password=REDACTED"),
                "\(secret): \(redacted)"
            )
            #expect(redacted.contains("page=2"), "\(secret): \(redacted)")
        }
    }

    @Test(
        "a sensitive JSON value holding quotes and backslashes is redacted whole at any depth of escaping, and the next field kept",
        arguments: 0..<8
    )
    func escapedQuotesInJSONValuesModel(seed: UInt64) throws {
        var random = SplitMix64.derived(seed: seed, 32)
        // No T, A, I or L: the marker in the middle of each secret appears nowhere else.
        let alphabet = Array("abcXYZ0189 &#=+%/?:;,'\"\\@!$()*~._-{}")
        func encoded(_ text: String) throws -> String {
            String(decoding: try JSONEncoder().encode(text), as: UTF8.self)
        }
        func piece() -> String {
            String((0..<Int(random.next() % 12)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
        }
        for _ in 0..<100 {
            let secret = piece() + "TAIL" + piece()
            var json = "{\"password\":\(try encoded(secret)),\"visible\":\"kept-field\"}"
            // Inside 0 to 3 other JSON strings, as a log line carrying an error body carrying a JSON body does.
            for _ in 0..<Int(random.next() % 4) { json = "{\"error\":\(try encoded(json))}" }
            let redacted = Redaction.redactedText(json)
            #expect(!redacted.contains("TAIL"), "\(secret): \(redacted)")
            #expect(redacted.contains("kept-field"), "\(secret): \(redacted)")
            #expect(!Redaction.bodyPreview(Data(json.utf8), limit: 100_000).contains("TAIL"), "\(json)")
        }
    }

    @Test(
        "a credential after an encoded space (a URL's %20, a form's +) is redacted, its encoded characters too",
        arguments: [
            "GET /cb?h=Authorization%3A%20Bearer%20ENC5ECRET-a%2B%2Fb%3D&page=2",
            "header=Basic+ENC5ECRET-b%3D%3D&page=2",
            "next=%2Fx%3Fauth%3DToken%2520ENC5ECRET-c&page=2",
            "value=Bearer+ENC5ECRET-d+more&page=2",
            "next=1&auth=Bearer LIT5ECRET-e page=2",
        ]
    )
    func encodedSpaceAfterScheme(_ text: String) {
        let redacted = Redaction.redactedText(text)
        #expect(!redacted.contains("5ECRET"), "\(redacted)")
        #expect(redacted.contains("page=2"), "\(redacted)")
        #expect(!Redaction.bodyPreview(Data(text.utf8)).contains("5ECRET"))
    }

    @Test(
        "text that ends inside an encoded scheme separator is read to its end and no further",
        arguments: ["word%3A", "word%3A%2F", "word%3A%2F%2F", "https%3a", "word%3DX1%3a"]
    )
    func endsInsideEncodedSchemeSeparator(text: String) {
        #expect(Redaction.redactedText(text) == text)
        #expect(Redaction.bodyPreview(Data(text.utf8)) == text)
    }

    @Test("a registered secret that starts in the body preview is removed whole, however far it runs")
    func previewOfKnownSecret() {
        let secret = "preview-known-" + String(repeating: "K", count: 5_000)
        Redaction.registerSecret(secret)
        let body = String(repeating: "-", count: 250) + secret + " end"
        let preview = Redaction.bodyPreview(Data(body.utf8))
        #expect(preview == String(repeating: "-", count: 250) + "<redac…")
    }

    @Test("reflection shows the body preview instead of the body, the underlying error as text, the code by name")
    func reflection() throws {
        let error = CourierError(
            .unacceptableStatus,
            message: "m",
            body: Data("hello".utf8),
            underlying: URLError(.badServerResponse)
        )
        let children = Dictionary(
            uniqueKeysWithValues: Mirror(reflecting: error).children.compactMap { child in
                child.label.map { ($0, child.value) }
            }
        )
        #expect(children["bodyPreview"] as? String == "hello")
        #expect(children["responseBody"] == nil)
        let underlying = try #require(children["underlying"] as? String)
        #expect(underlying.contains("Code=-1011"))
        #expect(Mirror(reflecting: error.code).children.isEmpty)
        var dumped = ""
        dump(error.code, to: &dumped)
        #expect(dumped == "- unacceptableStatus\n")
    }

    @Test("a retry event reflects as redacted text", .timeLimit(.minutes(1)))
    func retryEventReflection() async throws {
        let failing = try #require(URL(string: "https://u:retry-dump-pa55@h.example/x?token=retry-dump-5ecret"))
        let events = Locked<[RetryEvent]>([])
        var policy = RetryPolicy(maximumAttempts: 2, backoff: .immediate)
        policy.onRetry = { event in events.withLock { $0.append(event) } }
        var request = URLRequest(url: failing)
        request.setValue("Bearer retry-dump-header-5ecret", forHTTPHeaderField: "Authorization")
        let client = Client(
            baseURL: exampleBaseURL,
            transport: MockTransport(
                .failure(URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: failing])),
                then: .ok
            ),
            middleware: [.retry(policy)]
        )
        _ = try await client.send(request)
        let event = try #require(events.value.first)
        var dumped = ""
        dump(event, to: &dumped)
        for secret in ["retry-dump-pa55", "retry-dump-5ecret", "retry-dump-header-5ecret"] {
            #expect(!dumped.contains(secret), "\(dumped)")
        }
        #expect(dumped.contains("h.example"))
    }
}
