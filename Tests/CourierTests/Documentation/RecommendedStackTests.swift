import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every stack the documentation shows is the recommended one or a part of it, in the same order; and the
/// recommended stack, built from exactly the code the README shows, does what the docs promise.
@Suite("The recommended stack", .timeLimit(.minutes(1)))
struct RecommendedStackTests {
    // MARK: Every documented stack agrees

    /// The layers of the recommended order, outermost first, with the optional layers where they belong.
    /// A stack in the docs may leave layers out, but never lists two in another order.
    static let order = [
        "counting", "metrics", "tracing (whole call)", "logging", "timeout (whole call)", "idempotencyKey", "retry",
        "authenticating", "caching",
        "coalescing", "circuitBreaker", "hedging", "limitingConcurrency", "rateLimiting", "tracing",
        "timeout (per attempt)",
        "validatingStatus", "followingRedirects",
    ]

    /// Where the docs live: the README, every DocC article, the snippets and the doc comments.
    static func documentationFiles() throws -> [URL] {
        let root = packageRoot
        var files = [root.appendingPathComponent("README.md")]
        for folder in ["Sources", "Snippets"] {
            let enumerator = FileManager.default.enumerator(
                at: root.appendingPathComponent(folder),
                includingPropertiesForKeys: nil
            )
            while let url = enumerator?.nextObject() as? URL {
                if url.pathExtension == "md" || url.pathExtension == "swift" { files.append(url) }
            }
        }
        return files
    }

    /// A stack found in the docs: where it is and its layers, outermost first.
    struct Listing: CustomStringConvertible {
        let place: String
        let layers: [String]
        var description: String { "\(place): \(layers.joined(separator: " → "))" }
    }

    /// Every `middleware: [ … ]` list in `text`, with the built-in layers it names, in order. In Swift files
    /// only doc comments count (`///` lines).
    static func listings(in text: String, place: String, docCommentsOnly: Bool) -> [Listing] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard docCommentsOnly else { return line }
            let trimmed = line.drop { $0 == " " }
            return trimmed.hasPrefix("///") ? trimmed.dropFirst(3) : ""
        }
        let source = lines.joined(separator: "\n")
        var listings: [Listing] = []
        var searchStart = source.startIndex
        while let open = source.range(of: "middleware: [", range: searchStart..<source.endIndex) {
            var depth = 1
            var index = open.upperBound
            var element = ""
            var elements: [String] = []
            while index < source.endIndex, depth > 0 {
                let character = source[index]
                switch character {
                case "[", "(", "{": depth += 1
                case "]", ")", "}": depth -= 1
                default: break
                }
                if depth == 1 && character == "," {
                    elements.append(element)
                    element = ""
                } else if depth > 0 {
                    element.append(character)
                }
                index = source.index(after: index)
            }
            elements.append(element)
            let names = elements.compactMap { element -> String? in
                let code = element.split(separator: "\n").map { $0.split(separator: "//").first ?? "" }
                    .joined().trimmingCharacters(in: .whitespaces)
                guard code.hasPrefix(".") else { return nil }
                let name = String(code.dropFirst().prefix { $0.isLetter || $0.isNumber })
                // `.tracing(kind: .internal)` outermost is the optional span for the whole call.
                return name == "tracing" && code.contains(".internal") ? "tracing (whole call)" : name
            }
            let line = source[..<open.lowerBound].filter { $0 == "\n" }.count + 1
            listings.append(Listing(place: "\(place):\(line)", layers: named(names)))
            searchStart = index
        }
        return listings
    }

    /// The names of the recommended order for the built-in layers in `names`; a timeout is per attempt
    /// when a layer that repeats or authenticates attempts comes before it.
    static func named(_ names: [String]) -> [String] {
        var layers: [String] = []
        for name in names {
            if name == "timeout" {
                let perAttempt = layers.contains { ["retry", "authenticating", "hedging"].contains($0) }
                layers.append(perAttempt ? "timeout (per attempt)" : "timeout (whole call)")
            } else if order.contains(name) {
                layers.append(name)
            }
        }
        return layers
    }

    @Test("every stack in the README, the articles, the snippets and the doc comments keeps the recommended order")
    func documentedStacksAgree() throws {
        var found: [Listing] = []
        for file in try Self.documentationFiles() {
            let text = try String(contentsOf: file, encoding: .utf8)
            found += Self.listings(
                in: text,
                place: file.lastPathComponent,
                docCommentsOnly: file.pathExtension == "swift" && !file.path.contains("/Snippets/")
            )
        }
        // The parser finds the stacks it is meant to find (a parser that found nothing would pass anything).
        #expect(found.filter { $0.layers.count >= 4 }.count >= 6)
        #expect(found.contains { $0.place.hasPrefix("Authentication.md") && $0.layers.contains("followingRedirects") })
        for listing in found {
            let ranks = listing.layers.map { Self.order.firstIndex(of: $0)! }
            #expect(ranks == ranks.sorted(), "out of the recommended order: \(listing)")
        }
    }

    @Test("the README's table lists the recommended order")
    func readmeTable() throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let rows = readme.split(separator: "\n").filter {
            $0.hasPrefix("| ") && $0.dropFirst(2).first?.isNumber == true
        }
        let names = rows.compactMap { row -> String? in
            guard let start = row.range(of: "`.") else { return nil }
            return String(row[start.upperBound...].prefix { $0.isLetter })
        }
        #expect(
            Self.named(names) == [
                "counting", "logging", "timeout (whole call)", "retry", "authenticating",
                "timeout (per attempt)", "validatingStatus", "followingRedirects",
            ]
        )
    }

    @Test("the README's paragraph on the optional layers names them in the recommended order")
    func readmeOptionalLayers() throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let paragraph = try #require(
            readme.components(separatedBy: "\n\n").first { $0.hasPrefix("Optional layers have their place") }
        )
        let names = paragraph.components(separatedBy: "`.").dropFirst().map { String($0.prefix { $0.isLetter }) }
        let optional = Self.order.drop { $0 != "authenticating" }.dropFirst().prefix { $0 != "tracing" }
        #expect(Self.named(names).filter { optional.contains($0) } == Array(optional))
    }

    @Test("a stack out of order is caught: the check fails for the Authentication article's old stack")
    func checkerCatchesMisorder() {
        let old = """
            middleware: [
                .counting(counter),
                .retry(.default),
                .authenticating(with: auth),
                .timeout(.seconds(10)),       // each send
                .followingRedirects(),        // after the token is set
                .validatingStatus(),
            ]
            """
        let listing = Self.listings(in: old, place: "old", docCommentsOnly: false)
        let ranks = listing[0].layers.map { Self.order.firstIndex(of: $0)! }
        #expect(ranks != ranks.sorted())
    }

    // MARK: The README's stack, verbatim

    /// The README's recommended stack, exactly as it is written there (the test below checks that).
    static func readmeStack(
        counter: RequestCounter,
        auth: TokenRefresher
    ) -> [Middleware] {
        // readme-stack.begin
        [
            .counting(counter),
            .logging(),
            .timeout(.seconds(10)),
            .retry(.default),
            .authenticating(with: auth),
            .timeout(.seconds(2)),
            .validatingStatus(),
            .followingRedirects(),
        ]
        // readme-stack.end
    }

    @Test("the stack built here is the README's, line for line")
    func stackIsTheReadmes() throws {
        func lines(between begin: String, and end: String, in text: String) -> [String] {
            let all = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let start = all.firstIndex(where: { $0.hasSuffix(begin) }),
                let stop = all[start...].firstIndex(where: { $0.hasPrefix(end) })
            else { return [] }
            return Array(all[(start + 1)..<stop])
        }
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let documented = lines(between: "middleware: [", and: "]", in: readme)
        let built = lines(between: "// readme-stack.begin", and: "// readme-stack.end", in: source)
        #expect(documented.count == 8)
        #expect(["["] + documented + ["]"] == built)
    }

    /// An API on two origins: redirects, a token that must be refreshed, a flaky and a hanging endpoint.
    private final class Scenario: Sendable {
        let counter = RequestCounter()
        let refreshes = Locked(0)
        let auth: TokenRefresher
        let transport: MockTransport
        let client: Client

        init() {
            let refreshes = self.refreshes
            auth = TokenRefresher(token: .init("token-v1-abcdef", expiresIn: .seconds(3600))) { _ in
                refreshes.withLock { $0 += 1 }
                return .init("token-v2-abcdef", expiresIn: .seconds(3600))
            }
            let calls = Locked([String: Int]())
            transport = MockTransport(
                .handler { request in
                    let url = request.urlRequest.url!
                    let key = "\(url.host!)\(url.path)"
                    let call = calls.withLock { calls -> Int in
                        calls[key, default: 0] += 1
                        return calls[key]!
                    }
                    let token = request.header("Authorization")
                    switch key {
                    case "api.example.test/v1/moved": return .status(302, headers: ["Location": "/v1/here"])
                    case "api.example.test/v1/away":
                        return .status(307, headers: ["Location": "https://cdn.example.test/file"])
                    case "api.example.test/v1/me" where token != "Bearer token-v2-abcdef":
                        return .status(401, headers: ["WWW-Authenticate": "Bearer"])
                    case "api.example.test/v1/flaky" where call == 1: return .serviceUnavailable()
                    case "api.example.test/v1/hung" where call == 1: return .hang
                    default: return .text(token ?? "none")
                    }
                }
            )
            client = Client(
                baseURL: URL(string: "https://api.example.test/v1")!,
                transport: transport,
                middleware: RecommendedStackTests.readmeStack(counter: counter, auth: auth)
            )
        }

        func get(_ path: String) async throws -> String {
            try await client.send(Request<String>.get(path))
        }
    }

    @Test(
        "the README's stack follows a redirect, strips the token on another origin, refreshes once, retries, and cuts a hang"
    )
    func readmeStackBehaves() async throws {
        // The stack is the README's, on real clocks. Beside thousands of model-based cases on two cores (and
        // under the thread sanitizer), a call can wait for a thread longer than the stack's 10-second whole-call
        // timeout, or an attempt longer than the 2-second one: a run where a call timed out after 10 s of wall-clock time says nothing about the stack (its
        // calls take milliseconds, the hung one 2 s), so the scenario is run again, at most three times in all.
        // A stack that fails to cut the hang times out every time, and the test fails. High priority, so that its
        // jobs go ahead of the model-based tests' in the global executor's queues.
        for attempt in 1...3 {
            do {
                try await Task(priority: .high) { try await Self.runReadmeScenario() }.value
                return
            } catch let error as CourierError where error.code == .timedOut {
                // The per-attempt timeout too: in a fresh-clone CI run beside other builds, the retry of the hung
                // call waited for a thread past its 2 s as well, and the call failed with that timeout after 9.9 s.
                if attempt == 3 { throw error }
            }
        }
    }

    private static func runReadmeScenario() async throws {
        let scenario = Scenario()
        // A same-origin redirect keeps the credential; a foreign one loses it.
        #expect(try await scenario.get("/moved") == "Bearer token-v1-abcdef")
        #expect(try await scenario.get("/away") == "none")
        // A rejected token: one refresh, then the request goes through with the new one.
        #expect(try await scenario.get("/me") == "Bearer token-v2-abcdef")
        #expect(scenario.refreshes.value == 1)
        // A 503 is retried.
        #expect(try await scenario.get("/flaky") == "Bearer token-v2-abcdef")
        // A hung attempt is cut by the per-attempt timeout (2 s) and retried.
        #expect(try await scenario.get("/hung") == "Bearer token-v2-abcdef")
        #expect(scenario.transport.requests(to: "/v1/hung").count == 2)
        #expect(scenario.refreshes.value == 1)
        #expect(scenario.counter.snapshot.inFlight == 0)
        #expect(scenario.counter.snapshot.succeeded == 5)
    }
}

/// The package's root folder, found from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()
