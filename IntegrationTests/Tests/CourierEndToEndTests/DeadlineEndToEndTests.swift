import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Timeouts on the real clock, where AsyncHTTPClientTransport enforces the call's deadline itself and the
/// timeout layers above it run without a child task (URLSessionTransport goes through the child task): the
/// same promises either way. A loaded machine can delay a request by a second or more, so these tests only
/// assert what holds however late things run: no timeout fires early, the nearest deadline is the one
/// reported, and every request that reached the server has its connection closed. The manual-clock tests in
/// ResilienceEndToEndTests pin down each attempt exactly.
@Suite("Timeouts in real time over real sockets", .endToEndLimit(minutes: 2))
struct DeadlineEndToEndTests {
    @Test(
        "The recommended stack cuts each hanging attempt at its deadline, and the server sees each connection close",
        arguments: TransportKind.allCases
    )
    func recommendedStack(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client(Self.recommendedStack(perAttempt: .seconds(1)))
            let start = ContinuousClock.now
            let error = try await #require(throws: CourierError.self) { try await client.send(e2e.hang) }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .seconds(1))
            #expect(start.duration(to: .now) >= .seconds(2))
            try await Self.expectNoRequestOpen(e2e, reached: 1...2)
        }
    }

    @Test(
        "The whole-call timeout, when nearer, cuts the attempt under way and reports itself; no request stays open",
        arguments: TransportKind.allCases
    )
    func wholeCallBoundsAttempts(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let retries = Locked(0)
            let client = e2e.client([
                .timeout(.milliseconds(2_500)),
                .retry(ResilienceEndToEndTests.quickRetry(attempts: 10) { _ in retries.withLock { $0 += 1 } }),
                .timeout(.seconds(1)),
            ])
            let start = ContinuousClock.now
            let error = try await #require(throws: CourierError.self) { try await client.send(e2e.hang) }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .milliseconds(2_500))
            #expect(start.duration(to: .now) >= .milliseconds(2_500))
            // Attempts of a second each, the last one cut short by the whole call's deadline: no more than
            // three start (fewer on a slow machine).
            #expect(retries.value <= 2)
            try await Self.expectNoRequestOpen(e2e, reached: 1...(retries.value + 1))
        }
    }

    @Test(
        "A body that stalls after the head is cut at the deadline, and the server sees the connection close",
        arguments: TransportKind.allCases
    )
    func stalledBody(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let counter = RequestCounter()
            let client = e2e.client([.counting(counter), .timeout(.seconds(1))])
            // The head comes at once, then a line every 50 ms for ever: a send never sees the body end.
            let request = URLRequest(url: e2e.server.url("/stream/drip", query: ["everyMs": "50", "key": e2e.key]))
            let start = ContinuousClock.now
            let error = try await #require(throws: CourierError.self) { try await client.send(request) }
            #expect(error.code == .timedOut)
            #expect(error.timeout == .seconds(1))
            #expect(start.duration(to: .now) >= .seconds(1))
            #expect(counter.snapshot.inFlight == 0)
            try await e2e.expectHangsEnded(1)
        }
    }

    @Test("A response in time comes back whole through the recommended stack", arguments: TransportKind.allCases)
    func inTime(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client(Self.recommendedStack(perAttempt: .seconds(30)))
            let (data, response) = try await client.send(URLRequest(url: e2e.server.url("/large/100000")))
            #expect(response.statusCode == 200)
            #expect(data.count == 100_000)
        }
    }

    /// The recommended stack: a whole-call timeout of a minute, two attempts, a static token, a per-attempt
    /// timeout of `perAttempt`, status validation.
    private static func recommendedStack(perAttempt: Duration) -> [Middleware] {
        [
            .timeout(.seconds(60)),
            .retry(ResilienceEndToEndTests.quickRetry(attempts: 2)),
            .authenticating(token: "e2e-deadline-t0ken"),
            .timeout(perAttempt),
            .validatingStatus(),
        ]
    }

    /// Expects that at least the first of the attempts in `reached` got to the server, and that every attempt
    /// that did had its connection closed: none is left hanging. (An attempt cut with little time left may be
    /// closed before the server reads it.)
    private static func expectNoRequestOpen(_ e2e: EndToEnd, reached: ClosedRange<Int>) async throws {
        _ = try await e2e.inspector.wait(e2e.key, ["hangsEnded": reached.lowerBound])
        _ = try await e2e.inspector.reaches(e2e.key, ["hangsEnded": reached.upperBound], timeoutMs: 2_000)
        let counters = try await e2e.inspector.counters(e2e.key)
        #expect(counters.hanging == 0)
        #expect(reached.contains(counters.hangsEnded))
    }
}
