import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A seeded, model-based test of the promise "no secret in any text": random secrets in random carriers,
/// every rendering of the resulting error (and of the logging middleware's record for some cases) checked
/// for the secret, and the harmless facts checked to survive.
///
/// Run another seed with `COURIER_REDACTION_SEED=<n> swift test --filter RedactionModelTests`; a failure
/// prints the seed, the case number and the case.
@Suite("Redaction model")
struct RedactionModelTests {
    static let caseCount = 10_000

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["COURIER_REDACTION_SEED"].flatMap { UInt64($0) } ?? 0x5EC_12E7
    }

    // The time limit guards against a hang, not a speed check: under the thread sanitizer on a busy machine
    // one run has taken 99 s.
    @Test("no rendering of a random error, or of its log record, contains a random secret", .timeLimit(.minutes(5)))
    func noSecretInAnyText() async throws {
        let seed = Self.seed
        let known = KnownSecretPool(seed: seed)
        // Each case has its own generator (derived from the seed and its number), so the cases can run in
        // any order, on several tasks, and a failing one can be replayed alone.
        let chunks = 8
        let failures = await withTaskGroup(of: [String].self) { group in
            for chunk in 0..<chunks {
                group.addTask {
                    var failures: [String] = []
                    for index in stride(from: chunk, to: Self.caseCount, by: chunks) where failures.count < 3 {
                        // The cases never suspend on their own: yield, so that the suites running alongside
                        // (some with real-time timeouts) keep their share of the two cooperative threads.
                        await Task.yield()
                        if let failure = await Self.check(case: index, seed: seed, known: known) {
                            failures.append(failure)
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(failures.isEmpty, "\(failures.sorted().joined(separator: "\n"))")
    }

    /// Runs case `index`; returns what went wrong, with the seed and the case, or `nil`.
    static func check(case index: Int, seed: UInt64, known: KnownSecretPool) async -> String? {
        var random = SplitMix64.derived(seed: seed, UInt64(index))
        let redactionCase = RedactionCase.generate(using: &random, known: known)
        known.refresh()
        let error = redactionCase.makeError()
        // Every case: description, debugDescription, message, body preview. Every other case also `dump`
        // and the Mirror's descendants; every 20th also localizedDescription, String(reflecting:) and
        // interpolation (the same texts as description and debugDescription); every 10th the log record.
        let texts = renderings(of: error, aliases: index % 20 == 0, reflection: index % 2 == 0)
        var problems = redactionCase.leaks(in: texts)
        problems += redactionCase.missingFacts(
            description: texts["description"]!,
            debugDescription: texts["debugDescription"]!
        )
        if index % 10 == 0 {
            problems += await redactionCase.leaksInLogRecord()
        }
        guard !problems.isEmpty else { return nil }
        return "seed \(seed), case \(index): \(redactionCase)\n  " + problems.joined(separator: "\n  ")
    }
}

// MARK: - The model

/// Secrets registered with `Redaction.registerSecret`, for carriers that quote a secret in no shape a pattern
/// rule knows. A small pool, registered again before each use, so that the test does not crowd out secrets
/// other tests register on the shared registry.
final class KnownSecretPool: Sendable {
    let values: [String]

    init(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 0xC0FFEE)
        var values = (0..<32).map { index in
            let characters = index.isMultiple(of: 2) ? RandomText.plainCharacters : RandomText.tokenCharacters
            return "kn\(index)" + RandomText.token(length: 14 + index % 20, using: &random, characters: characters)
        }
        // Two secrets equal as `String`s (canonically equivalent) that differ in bytes: `é` composed, and `e`
        // with a combining accent. Each is a secret of its own, and each is redacted wherever it is quoted.
        let stem = "kn30" + RandomText.token(length: 12, using: &random, characters: RandomText.plainCharacters)
        values[30] = stem + "caf\u{E9}-tail"
        values[31] = stem + "cafe\u{301}-tail"
        self.values = values
        refresh()
    }

    func refresh() {
        for value in values { Redaction.registerSecret(value) }
    }
}

/// Where a secret is put.
private enum Carrier: CaseIterable {
    case queryParameter, fragmentParameter, userInfo, nestedParameter, sensitiveHeader, authorizationHeader
    case jsonBody, escapedJSONBody, formBody, underlyingAuthorization, underlyingFailingURL, nestedUnderlying
    case underlyingStruct, message, knownSecretQuoted, knownSecretEncodedInURL
}

private struct RedactionCase: CustomStringConvertible, Sendable {
    /// The secret the next carrier uses.
    var secret: String
    /// Every secret the carriers used.
    var secrets: [String] = []
    var carriers: [Carrier] = []
    var url = "https://api.example.test/v1/items"
    var query: [String] = []
    var fragment: [String] = []
    var userInfo: String?
    var requestHeaders: [String: String] = [:]
    var status: Int?
    var responseHeaders: [String: String] = [:]
    var body: String?
    var message = "the request failed"
    var underlying: ErrorRecipe?
    /// Facts that must survive redaction: (where, text).
    var facts: [(Rendering, String)] = []

    enum Rendering: Sendable { case description, debugDescription }

    var description: String {
        let shown = secrets.map { $0.count > 80 ? "\($0.prefix(80))… (\($0.count) characters)" : $0 }
        return "carriers \(carriers.map { "\($0)" }), secrets \(shown), "
            + "URL \(fullURL.prefix(300)), headers \(responseHeaders), body \(String((body ?? "").prefix(200))), "
            + "underlying \(underlying.map { String(describing: $0) } ?? "none")"
    }

    var fullURL: String {
        var text = url
        if let userInfo { text = "https://\(userInfo)@" + text.dropFirst("https://".count) }
        if !query.isEmpty { text += "?" + query.joined(separator: "&") }
        if !fragment.isEmpty { text += "#" + fragment.joined(separator: "&") }
        return text
    }

    var request: URLRequest {
        var request = URLRequest(url: URL(string: fullURL)!)
        for (name, value) in requestHeaders { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func makeError() -> CourierError {
        let request = self.request
        let response = status.map {
            HTTPURLResponse(url: request.url!, statusCode: $0, httpVersion: "HTTP/1.1", headerFields: responseHeaders)!
        }
        return CourierError(
            status == nil ? .transport : .unacceptableStatus,
            message: message,
            request: request,
            response: response,
            body: body.map { Data($0.utf8) },
            underlying: underlying?.make()
        )
    }

    // MARK: Checks

    /// The slices of the secrets that must not appear: each whole, and 10 characters from its start, middle
    /// and end (a cut-off value leaks a slice, not the whole); each also percent-encoded (once and twice)
    /// and JSON-escaped, so a secret that leaks in an encoded form is seen too.
    /// Filled in by ``generate(using:known:)`` once the secrets are known.
    var slices: [[UInt8]] = []

    static func slices(of secrets: [String]) -> [[UInt8]] {
        var slices = Set<[UInt8]>()
        func add(_ slice: String) { slices.insert(Array(slice.utf8)) }
        for secret in secrets {
            add(secret)
            let characters = Array(secret.utf8)
            let starts = characters.count > 10 ? [0, characters.count / 2 - 5, characters.count - 10] : [0]
            for start in starts {
                let slice = String(decoding: characters[start..<min(start + 10, characters.count)], as: UTF8.self)
                let encoded = RandomText.percentEncoded(slice)
                for form in [slice, encoded, RandomText.percentEncoded(encoded), RandomText.jsonEscaped(slice)] {
                    add(form)
                }
            }
        }
        return Array(slices)
    }

    func leaks(in renderings: [String: String]) -> [String] {
        var problems: [String] = []
        // Several renderings are the same text (description, localizedDescription, interpolation): check once.
        var seen = Set<String>()
        for (kind, text) in renderings.sorted(by: { $0.key < $1.key }) where seen.insert(text).inserted {
            let bytes = Array(text.utf8)
            if let slice = slices.first(where: { RandomText.occurs($0, in: bytes) }) {
                problems.append("\(kind) shows \"\(String(decoding: slice, as: UTF8.self))\" in: \(text.prefix(800))")
            }
        }
        return problems
    }

    func missingFacts(description: String, debugDescription: String) -> [String] {
        facts.compactMap { rendering, fact in
            let text = rendering == .description ? description : debugDescription
            return RandomText.occurs(Array(fact.utf8), in: Array(text.utf8))
                ? nil : "lost the harmless \"\(fact)\" in \(text.prefix(600))"
        }
    }

    /// The record the logging middleware makes for this error (a transport failure, or a response that a
    /// validation layer turns into an error), with headers and the body preview on.
    func leaksInLogRecord() async -> [String] {
        let records = Locked<[LogRecord]>([])
        let sink = LogSink { record in records.withLock { $0.append(record) } }
        let transport: MockTransport
        if let status {
            transport = MockTransport(.status(status, body: body ?? "", headers: responseHeaders))
        } else {
            let failure = underlying?.make() ?? URLError(.cannotConnectToHost)
            transport = MockTransport(.failure(failure))
        }
        let client = Client(
            transport: transport,
            middleware: [.logging(to: sink, includesHeaders: true, includesBodyPreview: true)]
                + (status == nil ? [] : [.validatingStatus()])
        )
        _ = try? await client.send(request)
        guard let record = records.value.first else { return ["no log record"] }
        var texts = ["record.description": record.description]
        for (key, value) in record.metadata { texts["record.metadata[\(key)]"] = value }
        return leaks(in: texts)
    }

    // MARK: Generation

    static func generate(using random: inout SplitMix64, known: KnownSecretPool) -> RedactionCase {
        var model = RedactionCase(secret: RandomText.secret(using: &random))
        let page = Int.random(in: 1...999, using: &random)
        model.query.append("page=\(page)")
        if Bool.random(using: &random) {
            model.status = [400, 401, 403, 429, 500, 503].randomElement(using: &random)!
        } else {
            model.underlying = .urlError(code: -1004, failingURL: nil)
        }
        let carrierCount = Int.random(in: 1...2, using: &random)
        for _ in 0..<carrierCount {
            model.secrets.append(model.secret)
            model.add(Carrier.allCases.randomElement(using: &random)!, using: &random, known: known)
        }
        model.secrets.append(model.secret)
        model.slices = slices(of: model.secrets)
        // Harmless facts that must survive: a parameter, the host and path, the status and an ordinary
        // header, and the codes of the underlying errors (`Code=-1004`).
        model.facts.append((.description, "page=\(page)"))
        model.facts.append((.description, "api.example.test/v1/items"))
        if let status = model.status {
            model.responseHeaders["X-Request-Id"] = "rid-\(page)"
            model.facts.append((.description, "→ \(status)"))
            model.facts.append((.debugDescription, "X-Request-Id: rid-\(page)"))
        }
        if let underlying = model.underlying {
            let text = underlying.description
            for code in RandomText.errorCodes(in: text) { model.facts.append((.description, code)) }
        }
        return model
    }

    mutating func add(_ carrier: Carrier, using random: inout SplitMix64, known: KnownSecretPool) {
        carriers.append(carrier)
        switch carrier {
        case .queryParameter:
            query.insert(
                "\(RandomText.parameterName(using: &random, inURL: true))=\(RandomText.percentEncoded(secret))",
                at: Int.random(in: 0...query.count, using: &random)
            )
        case .fragmentParameter:
            fragment += [
                "state=s1",
                "\(RandomText.parameterName(using: &random, inURL: true))=\(RandomText.percentEncoded(secret))",
            ]
        case .userInfo:
            userInfo = "admin:" + RandomText.percentEncoded(secret)
        case .nestedParameter:
            var nested =
                "/callback?state=1&\(RandomText.parameterName(using: &random, inURL: true))=\(RandomText.percentEncoded(secret))"
            for _ in 0..<Int.random(in: 1...2, using: &random) { nested = RandomText.percentEncoded(nested) }
            query.append("next=\(nested)")
        case .sensitiveHeader:
            let name = RandomText.headerName(using: &random)
            if status == nil { requestHeaders[name] = secret } else { responseHeaders[name] = secret }
        case .authorizationHeader:
            if Bool.random(using: &random) {
                secret = Data(("user:" + secret).utf8).base64EncodedString()
                secrets.append(secret)
            }
            let value = (secret.hasPrefix("dXNlcj") ? "Basic " : "Bearer ") + secret
            // A request's Authorization header, or a response header that echoes a credential under an
            // ordinary name (only the Bearer/Basic rule can find it there).
            if status == nil {
                requestHeaders["Authorization"] = value
            } else {
                responseHeaders["X-Debug-Echo"] = value
            }
        case .jsonBody, .escapedJSONBody:
            status = status ?? 400
            if Int.random(in: 0..<3, using: &random) == 0 {
                secret = "L" + RandomText.token(length: Int.random(in: 240...2_400, using: &random), using: &random)
                secrets.append(secret)
            }
            let key = RandomText.jsonKey(using: &random)
            let space = String(repeating: " ", count: Int.random(in: 0...2, using: &random))
            var json = "{\"\(key)\"\(space):\(space)\"\(RandomText.jsonEscaped(secret))\"}"
            if carrier == .escapedJSONBody {
                json =
                    "{\"error\":\""
                    + RandomText.jsonEscaped(json) + "\"}"
            }
            // Around the preview's cut-off (256 characters) and the bytes it reads.
            let padding = String(repeating: "p", count: Int.random(in: 0...1_200, using: &random))
            body = "{\"pad\":\"\(padding)\",\"data\":\(json)}"
        case .formBody:
            status = status ?? 400
            let padding = String(repeating: "q", count: Int.random(in: 0...600, using: &random))
            body =
                "pad=\(padding)&grant_type=refresh_token&\(RandomText.parameterName(using: &random, inURL: false))="
                + RandomText.formEncoded(secret) + "&scope=read"
        case .underlyingAuthorization:
            underlying = .described("proxy said: Authorization: Bearer \(secret)", wrapping: underlying)
        case .underlyingFailingURL:
            let url =
                "https://h.example/cb?\(RandomText.parameterName(using: &random, inURL: true))=\(RandomText.percentEncoded(secret))"
            underlying = .urlError(code: -1004, failingURL: url)
        case .nestedUnderlying:
            var recipe = ErrorRecipe.urlError(
                code: -1001,
                failingURL: "https://root:\(RandomText.percentEncoded(secret))@h.example/x"
            )
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                recipe = .nsError(domain: "Layer", code: Int.random(in: 1...99, using: &random), underlying: recipe)
            }
            underlying = recipe
        case .underlyingStruct:
            underlying = .described(
                "AuthFailure(status: 401, \(RandomText.structField(using: &random)): \"\(secret)\")",
                wrapping: underlying
            )
        case .message:
            message = "the server said: token \(secret) is not valid"
        case .knownSecretQuoted:
            secret = known.values.randomElement(using: &random)!
            secrets.append(secret)
            underlying = .described("the upstream echoed '\(secret)' back", wrapping: underlying)
        case .knownSecretEncodedInURL:
            secret = known.values.randomElement(using: &random)!
            secrets.append(secret)
            url += "/reset/" + RandomText.percentEncoded(secret)
        }
    }
}

/// How to make an underlying error (errors are not `Sendable`, so the case keeps a recipe).
private indirect enum ErrorRecipe: Sendable, CustomStringConvertible {
    case urlError(code: Int, failingURL: String?)
    case nsError(domain: String, code: Int, underlying: ErrorRecipe)
    case described(String, wrapping: ErrorRecipe?)

    func make() -> any Error {
        switch self {
        case .urlError(let code, let failingURL):
            var userInfo: [String: Any] = [:]
            if let failingURL, let url = URL(string: failingURL) { userInfo[NSURLErrorFailingURLErrorKey] = url }
            return URLError(URLError.Code(rawValue: code) ?? .unknown, userInfo: userInfo)
        case .nsError(let domain, let code, let underlying):
            return NSError(domain: domain, code: code, userInfo: [NSUnderlyingErrorKey: underlying.make()])
        case .described(let text, let wrapping):
            return DescribedError(text: text, wrapped: wrapping.map { String(describing: $0.make()) })
        }
    }

    var description: String { String(describing: make()) }
}

private struct DescribedError: Error, CustomStringConvertible {
    let text: String
    let wrapped: String?
    // The wrapped error's text on a line of its own: a header line (`Authorization: …`) in free text is
    // redacted to the end of its line, by design (nothing else marks where its value ends).
    var description: String { wrapped.map { "\(text)\nwrapping: \($0)" } ?? text }
}

private enum RandomText {
    /// RFC 6750's b64token characters: what bearer tokens, base64 and JWTs are made of.
    static let tokenCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=".utf8)
    static let plainCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func token(length: Int, using random: inout SplitMix64, characters: [UInt8] = plainCharacters) -> String {
        var bytes = [UInt8](repeating: 0, count: length)
        for index in 0..<length { bytes[index] = characters[Int(random.next() % UInt64(characters.count))] }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func secret(using random: inout SplitMix64) -> String {
        switch Int.random(in: 0..<4, using: &random) {
        case 0:  // opaque
            return "s" + token(length: Int.random(in: 12...64, using: &random), using: &random)
        case 1:  // with reserved characters
            return "r"
                + token(length: Int.random(in: 12...48, using: &random), using: &random, characters: tokenCharacters)
                + "=="
        case 2:  // JWT-like
            return "eyJhbGciOiJIUzI1NiJ9." + token(length: 40, using: &random) + "." + token(length: 43, using: &random)
        default:  // hex
            return "h" + token(length: 40, using: &random, characters: Array("0123456789abcdef".utf8))
        }
    }

    static func parameterName(using random: inout SplitMix64, inURL: Bool) -> String {
        let names = [
            "access_token", "refresh_token", "id_token", "token", "api_key", "apikey", "password", "client_secret",
            "signature", "code", "sig", "auth", "key", "auth_token", "X-Amz-Signature", "session_id", "x-session-token",
        ]
        let name = names.randomElement(using: &random)!
        // In a URL, any letter case; elsewhere, parameters are written in lowercase.
        guard inURL else { return name.lowercased() }
        switch Int.random(in: 0..<3, using: &random) {
        case 0: return name.uppercased()
        case 1: return name.prefix(1).uppercased() + name.dropFirst()
        default: return name
        }
    }

    static func headerName(using random: inout SplitMix64) -> String {
        [
            "Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization", "X-API-Key", "X-Access-Token",
            "X-Session-Token",
            "Api-Token", "X-Amz-Security-Token", "x-auth-token", "X-CSRF-Token",
        ].randomElement(using: &random)!
    }

    static func jsonKey(using random: inout SplitMix64) -> String {
        [
            "access_token", "refresh_token", "id_token", "accessToken", "client_secret", "password", "apiKey",
            "api_key",
            "session", "Authorization", "secret",
        ].randomElement(using: &random)!
    }

    static func structField(using random: inout SplitMix64) -> String {
        ["token", "accessToken", "password", "secret", "apiKey", "sessionToken"].randomElement(using: &random)!
    }

    /// `text` with every byte but RFC 3986's unreserved characters percent-encoded.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.append(byte)
            default:
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `text` as it is written inside a JSON string: `\`, `"` and `/` escaped.
    static func jsonEscaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if character == "\\" || character == "\"" || character == "/" { result.append("\\") }
            result.append(character)
        }
        return result
    }

    /// Every `Code=<number>` in `text`.
    static func errorCodes(in text: String) -> [String] {
        let bytes = Array(text.utf8)
        let marker = Array("Code=".utf8)
        var codes: [String] = []
        var index = 0
        while index + marker.count < bytes.count {
            guard bytes[index..<(index + marker.count)].elementsEqual(marker) else {
                index += 1
                continue
            }
            var end = index + marker.count
            if end < bytes.count && bytes[end] == UInt8(ascii: "-") { end += 1 }
            let digits = end
            while end < bytes.count && bytes[end] >= UInt8(ascii: "0") && bytes[end] <= UInt8(ascii: "9") { end += 1 }
            if end > digits { codes.append(String(decoding: bytes[index..<end], as: UTF8.self)) }
            index = end
        }
        return codes
    }

    static func formEncoded(_ text: String) -> String {
        percentEncoded(text)  // no spaces in the secrets: `+` would stand for one
    }

    /// Whether `needle` occurs in `haystack` (`memchr` and `memcmp`: Foundation's `contains` is far slower).
    static func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= haystack.count else { return false }
        return haystack.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { needle in
                let base = haystack.baseAddress!
                let last = haystack.count - needle.count
                var start = 0
                while start <= last {
                    guard let found = memchr(base + start, Int32(needle[0]), last - start + 1) else { return false }
                    let position = base.distance(to: UnsafeRawPointer(found))
                    if memcmp(base + position, needle.baseAddress!, needle.count) == 0 { return true }
                    start = position + 1
                }
                return false
            }
        }
    }
}
