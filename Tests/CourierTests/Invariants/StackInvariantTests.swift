import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The promises Courier makes whatever the server does and whatever order the middleware are in, checked
/// over thousands of seeded cases, made with `send`, `stream` or `events`: random stacks of the built-in
/// middleware against a server on three origins that redirects across origins and schemes, rejects tokens,
/// answers 401/403/429/500/503 with and without Retry-After, stalls, hangs and drops connections (an event
/// stream's connection gets an event, then an end or a drop).
///
/// The client's base URL is the API's origin; some calls name another origin (a CDN, another port or scheme).
/// After every case: no credential reached another origin than the base URL's, whatever the call named; nothing
/// non-idempotent was sent again after the server may have acted on it (unless it carried an idempotency key),
/// and an event stream (`client.events`) of a `POST` or `PATCH` without a key of the caller's made one call; no
/// body went out empty or cut;
/// refreshes stayed within the rejections that caused them and the limit; the counter is back to 0; the
/// call ended, and by its deadline when it had one; and no error description or log line contains a
/// secret. A failure prints the case's seed: `COURIER_INVARIANT_SEED=<seed> swift test --filter
/// StackInvariantTests` replays it alone.
@Suite("Stack invariants (seeded, model-based)", .timeLimit(.minutes(5)))
struct StackInvariantTests {
    /// How many cases CI runs; `COURIER_INVARIANT_CASES` raises it for a longer hunt.
    static var caseCount: Int {
        ProcessInfo.processInfo.environment["COURIER_INVARIANT_CASES"].flatMap(Int.init) ?? 10_000
    }

    static var seeds: [UInt64] {
        if let seed = ProcessInfo.processInfo.environment["COURIER_INVARIANT_SEED"].flatMap(UInt64.init) {
            return [seed]
        }
        let base = ProcessInfo.processInfo.environment["COURIER_INVARIANT_BASE"].flatMap(UInt64.init) ?? 0xC0_0121E5
        return (0..<UInt64(caseCount)).map { base &+ $0 }
    }

    @Test("every invariant holds over thousands of random stacks and servers")
    func invariantsHold() async throws {
        let seeds = Self.seeds
        let failures = Locked<[String]>([])
        // A few cases at a time, so that both cores work; each case has its own clock and server.
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            func startNext() {
                guard next < seeds.count else { return }
                let seed = seeds[next]
                next += 1
                group.addTask {
                    let problems = await Self.run(StackCase(seed: seed))
                    if !problems.isEmpty { failures.withLock { $0.append(contentsOf: problems) } }
                }
            }
            for _ in 0..<8 { startNext() }
            while await group.next() != nil {
                if failures.value.count > 200 { break }
                startNext()
            }
        }
        let found = failures.value
        #expect(found.count == 0, "\(found.count) violations; the first:\n\(found.prefix(5).joined(separator: "\n"))")
        if let path = ProcessInfo.processInfo.environment["COURIER_INVARIANT_REPORT"] {
            try found.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    // MARK: One case

    /// The secrets of one case: credentials and a token in the URL.
    struct Secrets {
        let staticToken: String
        let tenantKey: String
        let providerToken: String
        let refresherTokens: [String]
        let urlToken: String
        let password: String

        init(seed: UInt64) {
            let tag = String(seed, radix: 36)
            staticToken = "static-SECRET-\(tag)-a1b2c3"
            tenantKey = "tenant-SECRET-\(tag)-d4e5f6"
            providerToken = "provider-SECRET-\(tag)-g7h8i9"
            refresherTokens = (1...8).map { "refresher-SECRET-\(tag)-v\($0)-j0k1" }
            urlToken = "url-SECRET-\(tag)-l2m3n4"
            password = "pw-SECRET-\(tag)-o5p6"
        }

        var all: [String] { [staticToken, tenantKey, providerToken, urlToken, password] + refresherTokens }
    }

    static func run(_ model: StackCase) async -> [String] {
        let clock = ManualClock()
        let secrets = Secrets(seed: model.seed)
        let revoked: Set<String> =
            model.firstTokenRevoked ? [secrets.refresherTokens[0], secrets.providerToken, secrets.staticToken] : []
        let server = StackModelServer(case: model, clock: clock, revoked: revoked)
        let counter = RequestCounter()
        let logLines = Locked<[String]>([])
        let refreshes = Locked(0)
        var refresher: TokenRefresher?

        var middleware: [Middleware] = []
        for layer in model.layers {
            switch layer {
            case .counting: middleware.append(.counting(counter))
            case .logging:
                let sink = LogSink { record in logLines.withLock { $0.append("\(record)") } }
                middleware.append(.logging(to: sink, clock: clock))
            case .timeout(let duration): middleware.append(.timeout(duration, clock: clock))
            case .retry(let attempts, let immediate):
                var random = SplitMix64.derived(seed: model.seed, 2)
                let jitter = Locked(random.nextUnitInterval())
                let policy = RetryPolicy(
                    maximumAttempts: attempts,
                    backoff: immediate ? .immediate : .exponential(),
                    random: { jitter.value }
                )
                middleware.append(.retry(policy, clock: clock))
            case .staticToken(let header):
                let token = header == "X-Tenant-Key" ? secrets.tenantKey : secrets.staticToken
                middleware.append(.authenticating(token: token, scheme: scheme(header)))
            case .tokenProvider(let header):
                let token = secrets.providerToken
                middleware.append(.authenticating(scheme: scheme(header)) { token })
            case .refresher(let header):
                let tokens = secrets.refresherTokens
                let made =
                    refresher
                    ?? TokenRefresher(token: .init(tokens[0]), clock: clock) { _ in
                        let version = refreshes.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        return .init(tokens[min(version, tokens.count - 1)])
                    }
                refresher = made
                middleware.append(.authenticating(with: made, scheme: scheme(header)))
            case .validatingStatus: middleware.append(.validatingStatus())
            case .redirects: middleware.append(.followingRedirects())
            case .hedging: middleware.append(.hedging(after: .milliseconds(300), maxExtraAttempts: 1, clock: clock))
            case .idempotencyKey: middleware.append(.idempotencyKey())
            }
        }
        // The calls the case made, counted outside every layer (an event stream makes one per connection).
        let calls = Locked(0)
        if model.call != .send {
            middleware.insert(
                Middleware { request, next in
                    calls.withLock { $0 += 1 }
                    return try await next(request)
                },
                at: 0
            )
        }
        let transport: any Transport =
            model.transportEnforcesDeadlines
            ? ManualDeadlineTransport(base: server.transport, clock: clock) : server.transport
        let client = Client(baseURL: exampleBaseURL, transport: transport, middleware: middleware)

        var components = URLComponents(url: model.target, resolvingAgainstBaseURL: false)!
        if model.seed % 3 == 0 {
            components.queryItems =
                (components.queryItems ?? []) + [URLQueryItem(name: "access_token", value: secrets.urlToken)]
        }
        if model.seed % 5 == 0 {
            components.user = "ada"
            components.password = secrets.password
        }
        var request = URLRequest(url: components.url!)
        request.httpMethod = model.method
        switch model.body {
        case .none: break
        case .bytes: request.httpBody = StackCase.bodyBytes
        case .stream: request.httpBodyStream = InputStream(data: StackCase.bodyBytes)
        }
        if model.idempotencyKey { request.setValue("key-\(model.seed)", forHTTPHeaderField: "Idempotency-Key") }
        let eventRequest = Self.eventRequest(like: request, model)

        // Run the call, moving virtual time whenever something sleeps on the clock.
        // The call runs in virtual time: the clock moves to the next deadline whenever all of the call's tasks
        // are suspended (ManualClock.run). A watchdog in real time catches a call that never ends.
        let sending = request
        let outcome = await withTaskGroup(of: Result<Int, any Error>?.self) { group in
            group.addTask {
                do {
                    return .success(
                        try await clock.run {
                            switch model.call {
                            case .send:
                                return try await client.send(sending).1.statusCode
                            case .stream:
                                let (body, response) = try await client.stream(sending)
                                _ = try await body.collect(upTo: 1 << 20)
                                return response.statusCode
                            case .events:
                                for try await _ in client.events(eventRequest, clock: clock) {}
                                return 200
                            }
                        }
                    )
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let ended = outcome != nil
        let finishedAt = clock.now.offset

        var problems: [String] = []
        func violation(_ text: String) {
            problems.append("\(text)\n  case: \(model)\n  server: \(server.receptions.value.map(\.description))")
        }

        let receptions = server.receptions.value
        // The call ended, and within its deadline.
        if !ended { violation("the call did not end (30 s of real time with nothing left to move it)") }
        // (An event stream is a call per connection, each with its own deadline.)
        if let deadline = model.wholeCallDeadline, model.call != .events, finishedAt > deadline {
            violation("the call ended at \(finishedAt), past its \(deadline) deadline")
        }
        // No credential at another origin.
        let credentialHeaders = model.credentialHeaders
        for reception in receptions where reception.origin != StackModelServer.apiOrigin {
            for (name, value) in reception.headers {
                if credentialHeaders.contains(name.lowercased()) || secrets.all.contains(where: value.contains) {
                    violation("a credential reached \(reception.origin): \(name)")
                }
            }
        }
        // Nothing non-idempotent sent again after the server may have acted on it, without a key.
        let hasKey =
            model.idempotencyKey || model.layers.contains { if case .idempotencyKey = $0 { true } else { false } }
        if ["POST", "PATCH"].contains(model.method) && !hasKey {
            let sends = receptions.filter { $0.method == model.method }
            if let first = sends.firstIndex(where: \.mayHaveProcessed), first < sends.count - 1 {
                violation("\(model.method) sent again after the server may have acted on it")
            }
        }
        // An event stream of a request that may not be sent again makes one call, whatever the server does: a
        // key the idempotencyKey middleware adds is new on each call, so only the caller's own key allows more.
        if model.call == .events && ["POST", "PATCH"].contains(model.method) && !model.idempotencyKey {
            let count = calls.value
            if count > 1 { violation("the event stream sent its \(model.method) in \(count) calls") }
        }
        // No body went out empty or cut.
        for reception in receptions where reception.method == model.method && model.body != .none {
            if reception.body != StackCase.bodyBytes {
                violation(
                    "a \(reception.method) went out with \(reception.body.count) of \(StackCase.bodyBytes.count) body bytes"
                )
            }
        }
        // Refreshes within the rejections that caused them, and the limit.
        if let refresher {
            let rejections = receptions.filter { $0.origin == StackModelServer.apiOrigin && $0.answer.hasPrefix("401") }
                .count
            if refresher.refreshCount > min(rejections, TokenRefresher.RefreshLimit.default.maximum) {
                violation("\(refresher.refreshCount) refreshes for \(rejections) rejections")
            }
        }
        // The counter is back to 0.
        if model.layers.contains(where: { if case .counting = $0 { true } else { false } }) {
            let snapshot = counter.snapshot
            if snapshot.inFlight != 0 || snapshot.started != snapshot.finished || snapshot.started == 0 {
                violation("counter: \(snapshot)")
            }
        }
        // No secret in any text.
        var texts = logLines.value
        if case .failure(let error) = outcome {
            var dumped = ""
            dump(error, to: &dumped)
            texts += [
                "\(error)", String(reflecting: error), error.localizedDescription, dumped,
                (error as? CourierError)?.debugDescription ?? "",
            ]
        }
        for text in texts {
            for secret in secrets.all where text.contains(secret) {
                violation("a secret in a text: \(secret) in \(text.prefix(300))")
            }
        }
        return problems
    }

    /// The case's request as the `Request` that `client.events` takes: the same method, URL, body and key.
    private static func eventRequest(like request: URLRequest, _ model: StackCase) -> Request<Data> {
        var headers: HTTPHeaders = [:]
        if model.idempotencyKey { headers["Idempotency-Key"] = "key-\(model.seed)" }
        let body: RequestBody?
        switch model.body {
        case .none: body = nil
        case .bytes: body = .data(StackCase.bodyBytes)
        case .stream:
            body = .stream(length: Int64(StackCase.bodyBytes.count)) {
                AsyncStream<Data> { continuation in
                    continuation.yield(StackCase.bodyBytes)
                    continuation.finish()
                }
            }
        }
        return Request<Data>(
            method: HTTPMethod(rawValue: model.method),
            target: .url(request.url!),
            headers: headers,
            body: body
        )
    }

    private static func scheme(_ header: String) -> AuthorizationScheme {
        header == "Authorization" ? .bearer : .header(header)
    }
}

/// A transport that enforces the call's deadline on a manual clock, the way AsyncHTTPClientTransport does in
/// real time: at the deadline the exchange is cancelled and the transport throws.
private struct ManualDeadlineTransport: DeadlineEnforcingTransport {
    struct DeadlinePassed: Error {}

    let base: MockTransport
    let clock: ManualClock

    func enforces(_ deadline: Deadline) -> Bool { true }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let deadline = Deadline.current else { return try await base.send(request) }
        let left = deadline.timeLeft
        guard left > .zero else { throw DeadlinePassed() }
        return try await withThrowingTaskGroup(of: (Data, HTTPURLResponse)?.self) { group in
            defer { group.cancelAll() }
            group.addTask { try await base.send(request) }
            group.addTask {
                try await clock.sleep(for: left)
                return nil
            }
            guard let first = try await group.next(), let response = first else { throw DeadlinePassed() }
            return response
        }
    }
}
