import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server with `limit` requests per `window` on a manual clock (windows start at multiples of `window`):
/// it sends the IETF fields, or the `X-` ones, and answers `429` beyond the limit.
final class WindowedServer: Sendable {
    enum Style: Sendable { case ietf, x, none }

    /// Requests accepted per window index, and how many were refused.
    let counts = Locked<[Int: Int]>([:])
    let refusals = Locked(0)
    /// One arrival per answer (accepted or refused).
    let answered = Arrivals()
    let transport: MockTransport

    init(limit: Int, window: Duration = .seconds(60), clock: ManualClock, style: Style = .ietf) {
        let (counts, refusals, answered) = (self.counts, self.refusals, self.answered)
        transport = MockTransport { _ in
            defer { answered.arrive() }
            return Self.answer(limit: limit, window: window, now: clock.now.offset, style: style, counts, refusals)
        }
    }

    private static func answer(
        limit: Int,
        window: Duration,
        now: Duration,
        style: Style,
        _ counts: Locked<[Int: Int]>,
        _ refusals: Locked<Int>
    ) -> MockResponse {
        let index = Int((now / window).rounded(.down))
        let resetIn = Int(((window * (index + 1) - now) / .seconds(1)).rounded(.up))
        let accepted = counts.withLock { counts -> Int? in
            let count = counts[index, default: 0]
            guard count < limit else { return nil }
            counts[index] = count + 1
            return count + 1
        }
        let remaining = limit - (accepted ?? limit)
        var headers: [String: String]
        switch style {
        case .ietf:
            headers = [
                "RateLimit": "\"default\";r=\(remaining);t=\(resetIn)",
                "RateLimit-Policy": "\"default\";q=\(limit);w=\(Int(window / .seconds(1)))",
            ]
        case .x:
            headers = [
                "X-RateLimit-Limit": "\(limit)", "X-RateLimit-Remaining": "\(remaining)",
                "X-RateLimit-Reset": "\(resetIn)",
            ]
        case .none:
            headers = [:]
        }
        guard accepted != nil else {
            refusals.withLock { $0 += 1 }
            headers["Retry-After"] = "\(resetIn)"
            return MockResponse(status: 429, headers: headers)
        }
        return MockResponse(status: 200, headers: headers)
    }
}

@Suite("Middleware.rateLimiting")
struct RateLimitingTests {
    private let clock = ManualClock()
    private let events = Locked<[RateLimitEvent]>([])

    /// A policy that records every event in `events`.
    private var recordingPolicy: RateLimitPolicy {
        RateLimitPolicy(onEvent: { [events] event in events.withLock { $0.append(event) } })
    }

    /// A transport that answers its first request with 429 and `Retry-After: 30`, then 200.
    private static func throttlingOnce() -> MockTransport {
        MockTransport { request in request.callIndex == 0 ? .tooManyRequests(retryAfter: .seconds(30)) : .ok }
    }
    private let url = URL(string: "https://api.example.test/items")!

    /// A manual clock, a server allowing `limit` per minute on it, and a client limiting by `policy`.
    private func limited(
        _ limit: Int = 1,
        _ policy: RateLimitPolicy = RateLimitPolicy()
    ) -> (clock: ManualClock, server: WindowedServer, limiter: RateLimiter, client: Client) {
        let server = WindowedServer(limit: limit, clock: clock)
        let limiter = RateLimiter(policy, clock: clock)
        return (clock, server, limiter, Client(transport: server.transport, middleware: [.rateLimiting(limiter)]))
    }

    @Test("an event about a partition that is a registered secret never prints it")
    func secretPartitionDescription() {
        let secret = "tenant-key-\(UUID().uuidString)"
        Redaction.registerSecret(secret)
        let events: [RateLimitEvent] = [
            .waited(partition: secret, duration: .seconds(2)), .rejected(partition: secret, reason: .queueFull),
            .throttled(partition: secret, status: 429, retryAfter: nil),
            .updated(partition: secret, limit: 50, remaining: 7, resetIn: nil),
            .storeFailed(partition: secret, message: "down"),
        ]
        for event in events {
            #expect(!event.description.contains(secret))
            #expect(event.description.contains(Redaction.placeholder))
            #expect(event.partition == secret)
        }
    }

    @Test(
        "1,000 concurrent callers against 50 per window: zero 429s, in the minimum number of windows",
        .timeLimit(.minutes(1)),
        arguments: [WindowedServer.Style.ietf, .x]
    )
    func thousandCallers(style: WindowedServer.Style) async throws {
        let server = WindowedServer(limit: 50, clock: clock, style: style)
        let limiter = RateLimiter(RateLimitPolicy(maximumWait: nil), clock: clock)
        let client = Client(transport: server.transport, middleware: [.rateLimiting(limiter)])
        let done = Arrivals()
        let statuses = Locked<[Int]>([])
        let calls = (0..<1_000).map { _ in
            Task {
                defer { done.arrive() }
                do {
                    let (_, response) = try await client.send(URLRequest(url: url))
                    statuses.withLock { $0.append(response.statusCode) }
                } catch {
                    Issue.record(error)
                }
            }
        }
        for window in 1...20 {
            await done.wait(for: 50 * window)
            #expect(done.count == 50 * window)
            if window < 20 { clock.advance(by: .seconds(60)) }
        }
        for call in calls { await call.join() }

        #expect(server.refusals.value == 0)
        #expect(statuses.value.count == 1_000)
        #expect(statuses.value.allSatisfy { $0 == 200 })
        #expect(server.counts.value.count == 20)
        #expect(server.counts.value.values.allSatisfy { $0 == 50 })
        #expect(clock.now.offset == .seconds(19 * 60))
    }

    @Test("the first request goes alone as a probe; the others wait for its headers", .timeLimit(.minutes(1)))
    func probeFirst() async throws {
        let server = WindowedServer(limit: 5, clock: clock)
        let holding = HoldingTransport(wrapping: server.transport)
        let client = Client(transport: holding, middleware: [.rateLimiting(RateLimitPolicy(), clock: clock)])
        let returned = Arrivals()
        let calls = (0..<8).map { _ in
            Task {
                defer { returned.arrive() }
                return try await client.send(URLRequest(url: url)).1.statusCode
            }
        }
        await holding.waitUntilHolding(1)
        // Give the others every chance to go through if they wrongly could.
        for _ in 0..<200 { await Task.yield() }
        #expect(holding.requests.count == 1)
        holding.open()
        // The probe said 4 are left: 4 go, the other 3 wait for the next window. The time moves on only once
        // the limiter has seen all 5 responses: one that came back after the window's end, still saying `r=0`
        // of the window it was answered in, would rightly count against the next window.
        await returned.wait(for: 5)
        await clock.waitForSleepers(count: 1)
        // One timer for the window, however many wait.
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(60))
        var statuses: [Int] = []
        for call in calls { statuses.append(try await call.join()) }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(server.counts.value == [0: 5, 1: 3])
        #expect(server.refusals.value == 0)
    }

    @Test("a 429 is returned as it is, not re-sent; later requests wait Retry-After, then one probes")
    func retryAfterOnly() async throws {
        let transport = Self.throttlingOnce()
        let policy = recordingPolicy
        let client = Client(transport: transport, middleware: [.rateLimiting(policy, clock: clock)])

        let (_, first) = try await client.send(URLRequest(url: url))
        #expect(first.statusCode == 429)
        #expect(transport.callCount == 1)
        let second = Task { try await client.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [.init(offset: .seconds(30))])
        #expect(transport.callCount == 1)
        clock.advance(by: .seconds(30))
        #expect(try await second.join() == 200)
        #expect(transport.callCount == 2)
        #expect(
            events.value.contains(.throttled(partition: "api.example.test:443", status: 429, retryAfter: .seconds(30)))
        )
        #expect(events.value.contains(.waited(partition: "api.example.test:443", duration: .seconds(30))))
    }

    @Test("with retry outside: a 429 is retried once after Retry-After, with no second wait and one budget token")
    func withRetry() async throws {
        let transport = Self.throttlingOnce()
        let retries = Locked<[RetryEvent]>([])
        let budget = RetryBudget(clock: clock)
        var retryPolicy = RetryPolicy(budget: budget, random: { 0 })
        retryPolicy.onRetry = { event in retries.withLock { $0.append(event) } }
        let policy = recordingPolicy
        let client = Client(
            transport: transport,
            middleware: [.retry(retryPolicy, clock: clock), .rateLimiting(policy, clock: clock)]
        )
        let (_, response) = try await clock.run { try await client.send(URLRequest(url: url)) }

        #expect(response.statusCode == 200)
        #expect(transport.callCount == 2)
        #expect(retries.value.map(\.retryAfter) == [.seconds(30)])
        // The retry slept 30 s; the limiter's window had opened by then, so nothing waited twice.
        #expect(clock.now.offset == .seconds(30))
        #expect(!events.value.contains { if case .waited = $0 { true } else { false } })
        // The budget saw one call and one retry: waiting for a window is not a retry.
        #expect(budget.statistics == (requests: 1, retries: 1, refusals: 0))
    }

    @Test("a status validation layer inside turns the 429 into an error; the limiter still learns from it")
    func validationInside() async throws {
        let transport = MockTransport(.tooManyRequests(retryAfter: .seconds(10)), then: .ok)
        let client = Client(
            transport: transport,
            middleware: [.rateLimiting(RateLimitPolicy(), clock: clock), .validatingStatus()]
        )
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        #expect(error?.statusCode == 429)
        let second = Task { try await client.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(transport.callCount == 1)
        clock.advance(by: .seconds(10))
        #expect(try await second.join() == 200)
    }

    @Test("a slot that opens after the call's deadline fails at once with the timeout error, nothing sent")
    func deadline() async throws {
        let server = WindowedServer(limit: 1, clock: clock)
        let client = Client(
            transport: server.transport,
            middleware: [.timeout(.seconds(10), clock: clock), .rateLimiting(RateLimitPolicy(), clock: clock)]
        )
        _ = try await client.send(URLRequest(url: url))
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        #expect(error?.code == .timedOut)
        #expect(error?.timeout == .seconds(10))
        #expect(error?.middleware == "rateLimiting")
        #expect(clock.now.offset == .zero)
        #expect(server.transport.callCount == 1)
        #expect(server.refusals.value == 0)
    }

    @Test("past the maximum queue length or the maximum wait, a request fails at once with rateLimited")
    func bounds() async throws {
        let policy = RateLimitPolicy(
            maximumWait: .seconds(90),
            maximumQueueLength: 1,
            onEvent: { event in events.withLock { $0.append(event) } }
        )
        let (clock, _, limiter, client) = limited(1, policy)
        _ = try await client.send(URLRequest(url: url))
        let waiting = Task { try await client.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(limiter.state(for: "api.example.test:443")?.waiting == 1)

        let full = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        #expect(full?.code == .rateLimited)
        #expect(full?.middleware == "rateLimiting")
        #expect(events.value.contains(.rejected(partition: "api.example.test:443", reason: .queueFull)))

        var longWait = RateLimitPolicy(maximumWait: .seconds(30))
        longWait.onEvent = { event in events.withLock { $0.append(event) } }
        let impatient = RateLimiter(longWait, clock: clock)
        let other = Client(
            transport: WindowedServer(limit: 1, clock: clock).transport,
            middleware: [.rateLimiting(impatient)]
        )
        _ = try await other.send(URLRequest(url: url))
        let tooLong = await #expect(throws: CourierError.self) { try await other.send(URLRequest(url: url)) }
        #expect(tooLong?.code == .rateLimited)
        #expect(events.value.contains(.rejected(partition: "api.example.test:443", reason: .waitTooLong)))

        clock.advance(by: .seconds(60))
        #expect(try await waiting.join() == 200)
    }

    @Test("a waiting request is cancellable: it throws CancellationError, leaves the queue and sends nothing")
    func cancellation() async throws {
        let (clock, server, limiter, client) = limited()
        _ = try await client.send(URLRequest(url: url))
        let waiting = Task { try await client.send(URLRequest(url: url)) }
        await clock.waitForSleepers(count: 1)
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.join() }
        #expect(limiter.state(for: "api.example.test:443")?.waiting == 0)
        clock.advance(by: .seconds(60))
        #expect(server.transport.callCount == 1)
        // The slot the cancelled request would have had is still there.
        _ = try await client.send(URLRequest(url: url))
        #expect(server.refusals.value == 0)
    }

    @Test("partitions are per host by default, or per the key the policy returns")
    func partitions() async throws {
        let server = WindowedServer(limit: 1, clock: clock)
        let client = Client(transport: server.transport, middleware: [.rateLimiting(RateLimitPolicy(), clock: clock)])
        _ = try await client.send(URLRequest(url: url))
        // Another host has its own quota (the test server counts them together, so it refuses).
        let (_, other) = try await client.send(URLRequest(url: URL(string: "https://other.example.test/")!))
        #expect(other.statusCode == 429)

        let perTenant = RateLimitPolicy(partition: { $0.value(forHTTPHeaderField: "X-Tenant") ?? "" })
        let limiter = RateLimiter(perTenant, clock: clock)
        let tenants = Client(
            transport: WindowedServer(limit: 1, clock: clock).transport,
            middleware: [.rateLimiting(limiter)]
        )
        var a = URLRequest(url: url)
        a.setValue("a", forHTTPHeaderField: "X-Tenant")
        _ = try await tenants.send(a)
        #expect(limiter.state(for: "a")?.remaining == 0)
        #expect(limiter.state(for: "b") == nil)
        #expect(limiter.state(for: "api.example.test:443") == nil)
    }

    @Test("a client-side limit paces a server that sends no fields")
    func clientLimit() async throws {
        let server = WindowedServer(limit: 1_000, clock: clock, style: .none)
        let limiter = RateLimiter(RateLimitPolicy(clientLimit: .init(maxRequests: 2, per: .seconds(10))), clock: clock)
        let client = Client(transport: server.transport, middleware: [.rateLimiting(limiter)])
        _ = try await client.send(URLRequest(url: url))
        _ = try await client.send(URLRequest(url: url))
        let third = Task { try await client.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(server.transport.callCount == 2)
        clock.advance(by: .seconds(10))
        #expect(try await third.join() == 200)
    }

    @Test(
        "a 503 without numbers under a client-side limit holds this replica and, through the store, the next",
        .timeLimit(.minutes(1))
    )
    func holdReachesTheFleet() async throws {
        let epoch = Date(timeIntervalSince1970: 1_800_000_000)
        let currentDate: @Sendable () -> Date = { [clock] in
            epoch.addingTimeInterval(Double(clock.now.offset.components.seconds))
        }
        let policy = RateLimitPolicy(clientLimit: .init(maxRequests: 3, per: .seconds(60)), currentDate: currentDate)
        let store = InMemoryRateLimitStore(currentDate: currentDate)
        let first = RateLimiter(policy, store: store, clock: clock)
        let refusing = Client(
            transport: MockTransport(.status(503, headers: ["Retry-After": "30"])),
            middleware: [.rateLimiting(first)]
        )
        _ = try await refusing.send(URLRequest(url: url))
        let partition = "api.example.test:443"
        #expect(first.state(for: partition)?.remaining == 0)
        #expect(first.state(for: partition)?.resetIn == .seconds(30))
        #expect(await store.quota(for: partition)?.remaining == 0)

        // Another replica on the same store holds until the Retry-After, then goes.
        let answering = MockTransport.ok
        let second = Client(
            transport: answering,
            middleware: [.rateLimiting(RateLimiter(policy, store: store, clock: clock))]
        )
        let waiting = Task { try await second.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(answering.callCount == 0)
        clock.advance(by: .seconds(30))
        #expect(try await waiting.join() == 200)
        #expect(answering.callCount == 1)
    }

    @Test("a server that sends no fields is not paced at all after the probe")
    func unlimited() async throws {
        let server = WindowedServer(limit: 1_000, clock: clock, style: .none)
        let limiter = RateLimiter(RateLimitPolicy(), clock: clock)
        let client = Client(transport: server.transport, middleware: [.rateLimiting(limiter)])
        // The probe first, alone: requests that arrive while it is in flight wait for it, and such a wait
        // schedules a wake-up for its deadline (a sleep) depending on how the tasks interleave.
        _ = try await client.send(URLRequest(url: url))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<49 { group.addTask { _ = try await client.send(URLRequest(url: url)) } }
            try await group.waitForAll()
        }
        #expect(server.transport.callCount == 50)
        #expect(limiter.state(for: "api.example.test:443")?.isUnlimited == true)
        #expect(clock.totalSleeps == 0)
    }

    @Test("an unlimited partition is paced again from the first response that brings numbers")
    func unlimitedThenLimited() async throws {
        let transport = MockTransport { request in
            request.callIndex < 2
                ? .ok : MockResponse(status: 200, headers: ["x-ratelimit-remaining": "0", "x-ratelimit-reset": "10"])
        }
        let limiter = RateLimiter(RateLimitPolicy(), clock: clock)
        let client = Client(transport: transport, middleware: [.rateLimiting(limiter)])
        _ = try await client.send(URLRequest(url: url))
        _ = try await client.send(URLRequest(url: url))
        #expect(limiter.state(for: "api.example.test:443")?.isUnlimited == true)
        _ = try await client.send(URLRequest(url: url))
        let state = try #require(limiter.state(for: "api.example.test:443"))
        #expect(!state.isUnlimited)
        #expect(state.remaining == 0)
        #expect(state.resetIn == .seconds(10))
        let fourth = Task { try await client.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(transport.callCount == 3)
        clock.advance(by: .seconds(10))
        #expect(try await fourth.join() == 200)
        #expect(transport.callCount == 4)
    }

    @Test("an epoch-time X-RateLimit-Reset is read against the injected date")
    func epochReset() async throws {
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        let transport = MockTransport(
            .status(200, headers: ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1767225645"]),
            then: .ok
        )
        let limiter = RateLimiter(RateLimitPolicy(currentDate: { date }), clock: clock)
        let client = Client(transport: transport, middleware: [.rateLimiting(limiter)])
        _ = try await client.send(URLRequest(url: url))
        #expect(limiter.state(for: "api.example.test:443")?.resetIn == .seconds(45))
    }

    @Test("a shared store lets a second replica start from the first one's quota instead of probing")
    func sharedStore() async throws {
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        let store = InMemoryRateLimitStore(currentDate: { date })
        let server = WindowedServer(limit: 1, clock: clock)
        let policy = RateLimitPolicy(currentDate: { date })
        let first = Client(
            transport: server.transport,
            middleware: [.rateLimiting(RateLimiter(policy, store: store, clock: clock))]
        )
        _ = try await first.send(URLRequest(url: url))
        let stored = try #require(await store.quota(for: "api.example.test:443"))
        #expect(stored.remaining == 0)
        #expect(stored.resetsAt == date.addingTimeInterval(60))

        let second = RateLimiter(policy, store: store, clock: clock)
        let replica = Client(transport: server.transport, middleware: [.rateLimiting(second)])
        let waiting = Task { try await replica.send(URLRequest(url: url)).1.statusCode }
        await clock.waitForSleepers(count: 1)
        #expect(server.transport.callCount == 1)
        clock.advance(by: .seconds(60))
        #expect(try await waiting.join() == 200)
        #expect(server.refusals.value == 0)
    }

    @Test("the in-memory store drops entries whose window is long over once it holds more than 64")
    func storePrunes() async throws {
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        let store = InMemoryRateLimitStore(currentDate: { date })
        let old = RateLimitQuota(limit: 1, remaining: 0, resetsAt: date.addingTimeInterval(-120), window: nil)
        let fresh = RateLimitQuota(limit: 1, remaining: 0, resetsAt: date.addingTimeInterval(30), window: nil)
        await store.record(old, for: "old")
        for index in 0..<63 { await store.record(fresh, for: "fresh-\(index)") }
        #expect(await store.quota(for: "old") == old)
        await store.record(fresh, for: "one-more")
        #expect(await store.quota(for: "old") == nil)
        #expect(await store.quota(for: "fresh-0") == fresh)
    }

    @Test("events report what a response said")
    func updatedEvents() async throws {
        let server = WindowedServer(limit: 3, clock: clock)
        let policy = recordingPolicy
        let client = Client(transport: server.transport, middleware: [.rateLimiting(policy, clock: clock)])
        _ = try await client.send(URLRequest(url: url))
        #expect(
            events.value == [.updated(partition: "api.example.test:443", limit: 3, remaining: 2, resetIn: .seconds(60))]
        )
        #expect(events.value.first?.description == "2/3 left for api.example.test:443, resets in 60.0 seconds")
    }

    @Test("a reset too far for a Duration (1e21 s) does not trap: the next request fails at once, saying why")
    func hugeReset() async throws {
        let transport = MockTransport(
            .status(
                200,
                headers: ["X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1e21"]
            ),
            then: .ok
        )
        let limiter = RateLimiter(RateLimitPolicy(maximumWait: .seconds(60)), clock: clock)
        let client = Client(transport: transport, middleware: [.rateLimiting(limiter)])
        #expect(try await client.send(URLRequest(url: url)).1.statusCode == 200)
        #expect(limiter.state(for: "api.example.test:443")?.resetIn == .seconds(1 << 40))
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        #expect(error?.code == .rateLimited)
        #expect(error?.message.contains("opens in 1099511627776.0 seconds, past the maximum wait") == true)
        #expect(transport.callCount == 1)
        #expect(clock.now.offset == .zero)
    }

    @Test(
        "a quota of 0 does not lock the host: once its reset has passed a request goes out again",
        .timeLimit(.minutes(1))
    )
    func zeroQuota() async throws {
        let empty = MockResponse.status(
            200,
            headers: ["X-RateLimit-Limit": "0", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"]
        )
        let transport = MockTransport(empty, then: empty, .ok)
        let limiter = RateLimiter(RateLimitPolicy(maximumWait: .seconds(60)), clock: clock)
        let client = Client(transport: transport, middleware: [.rateLimiting(limiter)])
        _ = try await client.send(URLRequest(url: url))

        for call in 2...3 {
            let next = Task { try await client.send(URLRequest(url: url)).1.statusCode }
            await clock.waitForSleepers(count: 1)
            #expect(clock.pendingDeadlines == [.init(offset: clock.now.offset + .seconds(1))])
            #expect(transport.callCount == call - 1)
            clock.advance(by: .seconds(1))
            // Either the request goes, or (the lock) the limiter sleeps again until the maximum wait.
            try await waitUntil { transport.callCount == call || clock.sleeperCount == 1 }
            #expect(transport.callCount == call, "no request was sent after the reset")
            if transport.callCount < call { clock.advance(by: .seconds(60)) }
            #expect((try? await next.join()) == 200)
        }
        // The server's third answer has no fields: nothing is paced any more.
        #expect(limiter.state(for: "api.example.test:443")?.isUnlimited == true)
    }

    @Test(
        "after a redirect to another host, what that host says of its rate limit is not charged to the first host's partition",
        arguments: [200, 429]
    )
    func redirectToAnotherHost(status: Int) async throws {
        let transport = MockTransport { request in
            if request.url?.host == "api.example.test" {
                return request.url?.path == "/export"
                    ? .status(302, headers: ["Location": "https://cdn.other.test/file"]) : .ok
            }
            var headers = ["X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3600"]
            if status == 429 { headers["Retry-After"] = "600" }
            return .status(status, headers: headers)
        }
        let limiter = RateLimiter(recordingPolicy, clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: transport,
            middleware: [.rateLimiting(limiter), .followingRedirects()]
        )

        let (_, response) = try await client.send(URLRequest(url: URL(string: "https://api.example.test/export")!))
        #expect(response.url?.host == "cdn.other.test")
        #expect(response.statusCode == status)
        // The first host said nothing of a limit; the next request to it goes at once.
        let (_, next) = try await client.send(URLRequest(url: URL(string: "https://api.example.test/other")!))
        #expect(next.statusCode == 200)
        #expect(limiter.state(for: "api.example.test:443")?.remaining == nil)
        #expect(!events.value.contains { if case .throttled = $0 { true } else { false } })
    }

    @Test("the in-memory store does not keep quotas without a reset, nor those long reset, as partitions come and go")
    func inMemoryStoreStaysBounded() async {
        let now = Locked(Date(timeIntervalSince1970: 1_700_000_000))
        let store = InMemoryRateLimitStore(currentDate: { now.value })
        let live = RateLimitQuota(limit: 10, remaining: 5, resetsAt: now.value.addingTimeInterval(3_600), window: nil)
        await store.record(live, for: "live")
        for tenant in 0..<1_000 {
            await store.record(RateLimitQuota(limit: 10, remaining: 5, resetsAt: nil, window: nil), for: "t\(tenant)")
        }
        #expect(await store.quota(for: "t0") == nil)
        #expect(await store.quota(for: "live") == live)

        // Quotas that reset more than a minute ago go too; those still current stay.
        for tenant in 0..<1_000 {
            let resets = now.value.addingTimeInterval(tenant < 500 ? 30 : 7_200)
            await store.record(
                RateLimitQuota(limit: 10, remaining: 5, resetsAt: resets, window: nil),
                for: "r\(tenant)"
            )
        }
        now.withLock { $0 += 120 }
        for tenant in 0..<1_000 {
            await store.record(RateLimitQuota(limit: 10, remaining: 5, resetsAt: nil, window: nil), for: "n\(tenant)")
        }
        #expect(await store.quota(for: "r0") == nil)
        #expect(await store.quota(for: "r999") != nil)
        #expect(await store.quota(for: "live") == live)
    }
}
