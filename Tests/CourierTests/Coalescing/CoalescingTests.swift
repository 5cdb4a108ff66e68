import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.coalescing", .timeLimit(.minutes(1)))
struct CoalescingTests {
    private let url = URL(string: "https://api.example.test/config")!

    private func get(_ url: URL, authorization: String? = nil) -> URLRequest {
        var request = URLRequest(url: url)
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        return request
    }

    private let coalescer = RequestCoalescer()
    /// Holds every call until the test opens it, and answers with the request's `Authorization` header as the
    /// body.
    private let held = HoldingTransport(
        wrapping: MockTransport { request in
            .status(200, body: request.header("Authorization") ?? "anonymous")
        }
    )
    /// Sends through `coalescer` to `held`.
    private let client: Client

    init() {
        client = Client(transport: held, middleware: [.coalescing(coalescer)])
    }

    @Test("1,000 concurrent identical GETs make one transport call and all get its response")
    func thousandGetsOneCall() async throws {
        let request = get(url, authorization: "Bearer a")

        let batch = Task { await client.sendAll(Array(repeating: request, count: 1000), maxConcurrency: 1000) }
        try await waitUntil { coalescer.waitingCallers == 1000 }
        #expect(coalescer.sharedCalls == 1)
        held.open()
        let results = await batch.join()

        #expect(held.requests.count == 1)
        let bodies = try results.map { String(decoding: try $0.get().0, as: UTF8.self) }
        #expect(bodies == Array(repeating: "Bearer a", count: 1000))
        #expect(coalescer.sharedCalls == 0)
        #expect(coalescer.waitingCallers == 0)
    }

    @Test("requests with different Authorization are sent separately; identical ones still share")
    func differentCredentialsAreNotShared() async throws {

        let alice1 = Task { try await client.send(get(url, authorization: "Bearer alice")) }
        let bob = Task { try await client.send(get(url, authorization: "Bearer bob")) }
        let alice2 = Task { try await client.send(get(url, authorization: "Bearer alice")) }
        await held.waitUntilHolding(2)
        try await waitUntil { coalescer.waitingCallers == 3 }
        #expect(coalescer.sharedCalls == 2)
        held.open()

        #expect(String(decoding: try await alice1.join().0, as: UTF8.self) == "Bearer alice")
        #expect(String(decoding: try await alice2.join().0, as: UTF8.self) == "Bearer alice")
        #expect(String(decoding: try await bob.join().0, as: UTF8.self) == "Bearer bob")
        #expect(held.requests.count == 2)
    }

    /// The tenant a test's caller acts for, read by a token provider as a multi-tenant service would.
    @TaskLocal private static var tenant = "nobody"

    @Test("listed outside .authenticating, coalescing fails the call instead of giving one tenant another's response")
    func misplacedOutsideAuthentication() async throws {
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: held,
            middleware: [.coalescing(coalescer), .authenticating(tokenProvider: { Self.tenant })]
        )
        let alice = Task { try await Self.$tenant.withValue("alice") { try await client.send(get(url)) } }
        await held.waitUntilHolding(1)
        let bob = Task { try await Self.$tenant.withValue("bob") { try await client.send(get(url)) } }
        try await waitUntil { coalescer.waitingCallers == 2 }
        held.open()

        for caller in [alice, bob] {
            let error = await #expect(throws: CourierError.self) { try await caller.join() }
            #expect(error?.code == .invalidRequest)
            #expect(error?.description.contains("alice") == false)
        }
        #expect(coalescer.sharedCalls == 0)
    }

    @Test("listed outside .headers with a credential field, coalescing fails the call for every caller")
    func misplacedOutsideCredentialHeaders() async throws {
        func client(_ key: String) -> Client {
            Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: held,
                middleware: [.coalescing(coalescer), .headers(["X-API-Key": key])]
            )
        }
        let alice = Task { try await client("alice-key").send(get(url)) }
        await held.waitUntilHolding(1)
        let bob = Task { try await client("bob-key").send(get(url)) }
        try await waitUntil { coalescer.waitingCallers == 2 }
        held.open()

        for caller in [alice, bob] {
            let error = await #expect(throws: CourierError.self) { try await caller.join() }
            #expect(error?.code == .invalidRequest)
        }
    }

    @Test("credential headers stay in the key even when named among the ignored headers")
    func credentialsAreNeverIgnored() throws {
        let coalescer = RequestCoalescer(ignoringHeaders: [
            "Authorization", "cookie", "X-API-Key", "X-Session-Token", "Accept",
        ])
        func key(_ fields: [String: String]) -> RequestCoalescer.Key? {
            var request = URLRequest(url: url)
            for (name, value) in fields { request.setValue(value, forHTTPHeaderField: name) }
            return coalescer.key(for: request)
        }

        #expect(coalescer.ignoredHeaders == ["accept"])
        for name in ["Authorization", "Cookie", "X-API-Key", "X-Session-Token"] {
            #expect(key([name: "alice"]) != key([name: "bob"]), "\(name)")
            #expect(key([name: "alice"]) != key([:]), "\(name)")
        }
        #expect(key(["Accept": "application/json"]) == key(["Accept": "text/plain"]))
    }

    @Test("a header registered as a credential after the coalescer was made is in the key from then on")
    func credentialRegisteredLater() throws {
        let name = "X-Coalescing-Late-Credential"
        let coalescer = RequestCoalescer(ignoringHeaders: [name])
        func key(_ value: String) -> RequestCoalescer.Key? {
            var request = URLRequest(url: url)
            request.setValue(value, forHTTPHeaderField: name)
            return coalescer.key(for: request)
        }
        #expect(key("alice") == key("bob"))
        CredentialHeaders.register(name)
        #expect(key("alice") != key("bob"))
    }

    @Test("POST requests are never coalesced")
    func postIsNeverCoalesced() async throws {
        var post = URLRequest(url: url)
        post.httpMethod = "POST"

        let batch = Task { await client.sendAll(Array(repeating: post, count: 5), maxConcurrency: 5) }
        // All five reach the transport while none has finished: nothing was shared.
        await held.waitUntilHolding(5)
        #expect(coalescer.sharedCalls == 0)
        held.open()
        let results = await batch.join()

        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(held.requests.count == 5)
    }

    @Test("every caller gets the shared call's error")
    func errorIsShared() async throws {
        let release = Gate()
        let transport = MockTransport { _ in
            await release.wait()
            throw URLError(.cannotConnectToHost)
        }
        let client = Client(transport: transport, middleware: [.coalescing(coalescer)])

        let batch = Task { await client.sendAll(Array(repeating: get(url), count: 50), maxConcurrency: 50) }
        try await waitUntil { coalescer.waitingCallers == 50 }
        release.open()
        let results = await batch.join()

        #expect(transport.callCount == 1)
        let errors = results.map { result -> CourierError? in
            guard case .failure(let error) = result else { return nil }
            return error as? CourierError
        }
        #expect(errors.allSatisfy { $0?.code == .transport })
        #expect((errors.first??.underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("a cancelled caller stops waiting at once, and the others still get the shared response")
    func cancelledCallerStopsWaiting() async throws {
        // The first caller starts the shared call; it is the one cancelled.
        let first = Task { try await client.send(get(url)) }
        await held.waitUntilHolding(1)
        let second = Task { try await client.send(get(url)) }
        let third = Task { try await client.send(get(url)) }
        try await waitUntil { coalescer.waitingCallers == 3 }

        first.cancel()

        // The shared call is still held in the transport, so this returns only because the caller left.
        await #expect(throws: CancellationError.self) { try await first.join() }
        #expect(coalescer.waitingCallers == 2)
        #expect(held.heldCount == 1)
        held.open()
        #expect(String(decoding: try await second.join().0, as: UTF8.self) == "anonymous")
        #expect(String(decoding: try await third.join().0, as: UTF8.self) == "anonymous")
        #expect(held.requests.count == 1)
    }

    @Test("when the last caller has gone, the shared call is cancelled and the next request starts afresh")
    func lastCallerGoneCancelsTheCall() async throws {
        let arrived = Arrivals()
        let transportSawCancellation = Arrivals()
        let transport = MockTransport { _ in
            arrived.arrive()
            if arrived.count > 1 { return .status(200, body: "fresh") }
            do {
                try await waitForCancellation()
            } catch {
                transportSawCancellation.arrive()
                throw error
            }
            return .ok
        }
        let client = Client(transport: transport, middleware: [.coalescing(coalescer)])
        let callers = (0..<3).map { _ in Task { try await client.send(get(url)) } }
        await arrived.wait(for: 1)
        try await waitUntil { coalescer.waitingCallers == 3 }

        callers[0].cancel()
        callers[1].cancel()
        #expect(coalescer.sharedCalls == 1)
        callers[2].cancel()
        #expect(coalescer.sharedCalls == 0)

        for caller in callers {
            await #expect(throws: CancellationError.self) { try await caller.join() }
        }
        await transportSawCancellation.wait(for: 1)
        #expect(transport.cancellationCount == 1)
        let (body, _) = try await client.send(get(url))
        #expect(String(decoding: body, as: UTF8.self) == "fresh")
        #expect(transport.callCount == 2)
    }

    @Test("the shared call does not run under the first caller's deadline, which would cut it short for the others")
    func sharedCallIgnoresFirstCallersDeadline() async throws {
        let clock = ManualClock()
        let client = Client(
            transport: held,
            middleware: [.coalescing(coalescer), .timeout(.seconds(30), clock: clock)]
        )
        // The first caller has one second left; the second has a hundred.
        let hurried = Task {
            try await Deadline.$current.withValue(Deadline(after: .seconds(1), clock: clock)) {
                try await client.send(get(url))
            }
        }
        await held.waitUntilHolding(1)
        let patient = Task {
            try await Deadline.$current.withValue(Deadline(after: .seconds(100), clock: clock)) {
                try await client.send(get(url))
            }
        }
        try await waitUntil { coalescer.waitingCallers == 2 }

        // The timeout inside the shared call waits its own 30 s, not the 1 s the first caller had left.
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(30))])
        clock.advance(by: .seconds(1))
        #expect(held.heldCount == 1)
        held.open()

        #expect(String(decoding: try await patient.join().0, as: UTF8.self) == "anonymous")
        #expect(String(decoding: try await hurried.join().0, as: UTF8.self) == "anonymous")
        #expect(held.requests.count == 1)
    }

    @Test("once a shared call has finished, the next identical request is sent again")
    func nothingIsCached() async throws {
        let transport = MockTransport { _ in .ok }
        let client = Client(transport: transport, middleware: [.coalescing()])

        _ = try await client.send(get(url))
        _ = try await client.send(get(url))

        #expect(transport.callCount == 2)
    }

    @Test(
        "a caller that joined does not take a response that Varies on a header the key leaves out: it sends its own",
        arguments: ["X-Request-ID", "traceparent, Accept", "*"]
    )
    func joinerHonoursVary(_ vary: String) async throws {
        let held = HoldingTransport(
            wrapping: MockTransport { request in
                .status(200, body: request.header("X-Request-ID") ?? "none", headers: ["Vary": vary])
            }
        )
        let client = Client(transport: held, middleware: [.coalescing(coalescer)])
        func request(_ id: String) -> URLRequest {
            var request = get(url)
            request.setValue(id, forHTTPHeaderField: "X-Request-ID")
            request.setValue("00-\(id)-01", forHTTPHeaderField: "traceparent")
            return request
        }
        let first = Task { try await client.send(request("one")) }
        await held.waitUntilHolding(1)
        let second = Task { try await client.send(request("two")) }
        // The second request joins the first's call: the key leaves tracing ids out …
        try await waitUntil { coalescer.waitingCallers == 2 }
        held.open()
        #expect(String(decoding: try await first.join().0, as: UTF8.self) == "one")
        // … but the server said the response depends on one of them (or on anything, `*`): it answers only the
        // request it was sent for.
        #expect(String(decoding: try await second.join().0, as: UTF8.self) == "two")
        #expect(held.requests.count == 2)
    }

    @Test("a response that Varies only on headers in the key is shared, whatever their spelling")
    func joinersShareWhenVaryIsInTheKey() async throws {
        let held = HoldingTransport(
            wrapping: MockTransport { _ in .status(200, body: "shared", headers: ["Vary": " accept-encoding ,ACCEPT"]) }
        )
        let client = Client(transport: held, middleware: [.coalescing(coalescer)])
        let first = Task { try await client.send(get(url)) }
        await held.waitUntilHolding(1)
        let second = Task { try await client.send(get(url)) }
        try await waitUntil { coalescer.waitingCallers == 2 }
        held.open()
        #expect(String(decoding: try await first.join().0, as: UTF8.self) == "shared")
        #expect(String(decoding: try await second.join().0, as: UTF8.self) == "shared")
        #expect(held.requests.count == 1)
    }

    @Test(
        "the key: method, URL and headers but tracing ids; header names are case-insensitive",
        arguments: [
            ("GET", ["Authorization": "Bearer a"], "GET", ["authorization": "Bearer a"], true),
            ("GET", ["Authorization": "Bearer a"], "GET", ["Authorization": "Bearer b"], false),
            ("GET", ["Accept": "application/json"], "GET", ["Accept": "text/html"], false),
            ("GET", ["X-Tenant": "1"], "GET", ["X-Tenant": "2"], false),
            ("GET", ["X-Request-ID": "1"], "GET", ["X-Request-ID": "2"], true),
            ("GET", ["traceparent": "00-a-b-01"], "GET", [:], true),
            ("HEAD", [:], "HEAD", [:], true),
            ("GET", [:], "HEAD", [:], false),
        ]
    )
    func key(method1: String, headers1: [String: String], method2: String, headers2: [String: String], same: Bool) {
        func request(_ method: String, _ headers: [String: String]) -> URLRequest {
            var request = URLRequest(url: url)
            request.httpMethod = method
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            return request
        }
        let first = coalescer.key(for: request(method1, headers1))
        let second = coalescer.key(for: request(method2, headers2))

        #expect(first != nil && second != nil)
        #expect((first == second) == same)
    }

    @Test("requests that must not be shared have no key", arguments: ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    func unsafeMethodsHaveNoKey(method: String) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        #expect(coalescer.key(for: request) == nil)
    }

    @Test("a GET with a body has no key")
    func getWithBodyHasNoKey() {
        var request = URLRequest(url: url)
        request.httpBody = Data("{}".utf8)
        #expect(coalescer.key(for: request) == nil)
    }

    @Test("the query is part of the key")
    func queryIsPartOfTheKey() {
        let a = coalescer.key(for: URLRequest(url: URL(string: "https://api.example.test/items?page=1")!))
        let b = coalescer.key(for: URLRequest(url: URL(string: "https://api.example.test/items?page=2")!))
        #expect(a != nil)
        #expect(a != b)
    }
}
