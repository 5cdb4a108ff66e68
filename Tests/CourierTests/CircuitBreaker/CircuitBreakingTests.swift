import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.circuitBreaker")
struct CircuitBreakingTests {
    private let hostA = URL(string: "https://a.example.test/items")!
    private let hostB = URL(string: "https://b.example.test/items")!

    /// A transport whose status for each host can be changed between requests.
    private final class Upstream: Sendable {
        let statuses = Locked<[String: Int]>([:])
        let transport: MockTransport

        init() {
            let statuses = self.statuses
            transport = MockTransport { request in
                .status(statuses.value[request.url!.host!] ?? 200)
            }
        }

        func set(_ status: Int, for url: URL) {
            statuses.withLock { $0[url.host!] = status }
        }
    }

    private let upstream = Upstream()
    private let clock = ManualClock()

    /// Makes `hostA` answer `status`, and returns a breaker on the suite's clock with a client that sends through
    /// it to `upstream`.
    private func circuit(
        hostAAnswering status: Int,
        threshold: Int,
        cooldown: Duration
    ) -> (breaker: CircuitBreaker, client: Client) {
        upstream.set(status, for: hostA)
        let breaker = CircuitBreaker(.init(failureThreshold: threshold, cooldown: cooldown), clock: clock)
        return (breaker, Client(transport: upstream.transport, middleware: [.circuitBreaker(breaker)]))
    }

    @Test("opens after N consecutive failures, then fails fast without reaching the transport")
    func opensAndFailsFast() async throws {
        let (breaker, client) = circuit(hostAAnswering: 503, threshold: 3, cooldown: .seconds(30))

        for expected in 1...2 {
            _ = try await client.send(URLRequest(url: hostA))
            #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: expected))
        }
        _ = try await client.send(URLRequest(url: hostA))
        #expect(breaker.state(for: hostA) == .open)

        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(error?.code == .circuitOpen)
        #expect(error?.middleware == "circuitBreaker")
        #expect(upstream.transport.callCount == 3)
    }

    @Test("after the cooldown, a successful probe closes the circuit")
    func probeCloses() async throws {
        let (breaker, client) = circuit(hostAAnswering: 500, threshold: 2, cooldown: .seconds(10))
        for _ in 0..<2 { _ = try await client.send(URLRequest(url: hostA)) }

        clock.advance(by: .seconds(9))
        await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        clock.advance(by: .seconds(1))
        #expect(breaker.state(for: hostA) == .halfOpen)
        upstream.set(200, for: hostA)
        let (_, response) = try await client.send(URLRequest(url: hostA))

        #expect(response.statusCode == 200)
        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 0))
        _ = try await client.send(URLRequest(url: hostA))
        #expect(upstream.transport.callCount == 4)
    }

    @Test(
        "a request a layer inside refused before sending counts neither way, and a probe refused so decides nothing",
        arguments: [CourierError.Code.concurrencyLimited, .rateLimited, .circuitOpen]
    )
    func refusedBeforeSending(_ code: CourierError.Code) async throws {
        upstream.set(503, for: hostA)
        let shedding = Locked(false)
        let shed = Middleware(name: "shed") { request, next in
            if shedding.value { throw CourierError(code, message: "refused before sending") }
            return try await next(request)
        }
        let breaker = CircuitBreaker(.init(failureThreshold: 2, cooldown: .seconds(10)), clock: clock)
        let client = Client(transport: upstream.transport, middleware: [.circuitBreaker(breaker), shed])
        _ = try await client.send(URLRequest(url: hostA))
        shedding.withLock { $0 = true }
        await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 1), "a shed request reset the count")

        shedding.withLock { $0 = false }
        _ = try await client.send(URLRequest(url: hostA))
        #expect(breaker.state(for: hostA) == .open)
        clock.advance(by: .seconds(10))
        shedding.withLock { $0 = true }
        await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(breaker.state(for: hostA) == .halfOpen, "a shed probe closed the circuit")
        #expect(upstream.transport.callCount == 2)
    }

    @Test("a failed probe opens the circuit for another full cooldown")
    func probeFailureReopens() async throws {
        let (breaker, client) = circuit(hostAAnswering: 502, threshold: 1, cooldown: .seconds(10))
        _ = try await client.send(URLRequest(url: hostA))

        clock.advance(by: .seconds(10))
        _ = try await client.send(URLRequest(url: hostA))  // the probe: 502
        #expect(breaker.state(for: hostA) == .open)
        clock.advance(by: .seconds(9))

        await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(upstream.transport.callCount == 2)
    }

    @Test("while the probe is in flight, other requests still fail fast", .timeLimit(.minutes(1)))
    func oneProbeAtATime() async throws {
        let arrived = Arrivals()
        let release = Gate()
        let failing = Locked(true)
        let transport = MockTransport { _ in
            if failing.value { return .serverError }
            arrived.arrive()
            await release.wait()
            return .ok
        }
        let breaker = CircuitBreaker(.init(failureThreshold: 1, cooldown: .seconds(5)), clock: clock)
        let client = Client(transport: transport, middleware: [.circuitBreaker(breaker)])
        _ = try await client.send(URLRequest(url: hostA))
        failing.withLock { $0 = false }
        clock.advance(by: .seconds(5))

        let probe = Task { try await client.send(URLRequest(url: hostA)) }
        await arrived.wait(for: 1)
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(error?.code == .circuitOpen)
        release.open()
        _ = try await probe.join()

        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 0))
        #expect(transport.callCount == 2)
    }

    @Test(
        "a hung probe replaced after another cooldown, then cancelled, lets no third probe through while the second is in flight",
        .timeLimit(.minutes(1))
    )
    func replacedProbeCancelled() async throws {
        let arrived = Arrivals()
        let release = Gate()
        // The first call fails and opens the circuit; the first probe hangs until cancelled; the second waits for
        // the gate, then succeeds; any later call succeeds at once.
        let transport = MockTransport { request in
            switch request.callIndex {
            case 0: return .serverError
            case 1:
                arrived.arrive()
                return .hang
            case 2:
                arrived.arrive()
                await release.wait()
                return .ok
            default:
                // A third probe, which must not be let through while the second is in flight.
                return .ok
            }
        }
        let breaker = CircuitBreaker(.init(failureThreshold: 1, cooldown: .seconds(10)), clock: clock)
        let client = Client(transport: transport, middleware: [.circuitBreaker(breaker)])
        _ = try await client.send(URLRequest(url: hostA))
        clock.advance(by: .seconds(10))
        let first = Task { try await client.send(URLRequest(url: hostA)) }
        await arrived.wait(for: 1)
        clock.advance(by: .seconds(10))
        let second = Task { try await client.send(URLRequest(url: hostA)) }
        await arrived.wait(for: 2)
        clock.advance(by: .seconds(1))
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.join() }
        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }
        #expect(error?.code == .circuitOpen)
        release.open()
        _ = try await second.join()
        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 0))
        #expect(transport.callCount == 3)
    }

    @Test(
        "a whole-call timeout above the breaker counts as the host's failure, with or without a layer of your own below",
        .timeLimit(.minutes(1)),
        arguments: [false, true]
    )
    func wholeCallTimeoutIsAFailure(layerBelow: Bool) async throws {
        let arrived = Arrivals()
        let breaker = CircuitBreaker(.init(failureThreshold: 1, cooldown: .seconds(30)), clock: clock)
        var layers: [Middleware] = [.timeout(.seconds(1), clock: clock), .circuitBreaker(breaker)]
        if layerBelow { layers.append(Middleware(name: "mine") { request, next in try await next(request) }) }
        let client = Client(transport: MockTransport.hanging(counting: arrived), middleware: layers)
        let call = Task { try await client.send(URLRequest(url: hostA)) }
        await arrived.wait(for: 1)
        clock.advance(by: .seconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(breaker.state(for: hostA) == .open)
    }

    @Test(
        "a caller that goes away just before the deadline, its request unwinding past it, is a cancellation: the circuit stays closed",
        .timeLimit(.minutes(1)),
        arguments: [false, true]
    )
    func callerCancelledBeforeTheDeadline(nearerOuterDeadline: Bool) async throws {
        let arrived = Arrivals()
        let unwinding = Arrivals()
        let unwound = Gate()
        // Below the breaker: on its way out, the request takes until the test lets it go.
        let slowCleanup = Middleware(name: "slowCleanup") { request, next in
            do {
                return try await next(request)
            } catch {
                unwinding.arrive()
                await unwound.wait()
                throw error
            }
        }
        let breaker = CircuitBreaker(.init(failureThreshold: 1, cooldown: .seconds(30)), clock: clock)
        // The timeout's own deadline goes on its shared timer; a nearer deadline of the caller's, on a race of the
        // request's own.
        let client = Client(
            transport: MockTransport.hanging(counting: arrived),
            middleware: [
                .timeout(nearerOuterDeadline ? .seconds(10) : .seconds(1), clock: clock), .circuitBreaker(breaker),
                slowCleanup,
            ]
        )
        let outer = nearerOuterDeadline ? Deadline(after: .seconds(1), clock: clock) : nil
        let call = Task { [hostA] in
            try await Deadline.$current.withValue(outer) { try await client.send(URLRequest(url: hostA)) }
        }
        await arrived.wait(for: 1)
        clock.advance(by: .milliseconds(500))
        call.cancel()
        await unwinding.wait(for: 1)
        clock.advance(by: .seconds(1))
        unwound.open()
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 0))
    }

    @Test("each host has its own circuit")
    func perHost() async throws {
        let (breaker, client) = circuit(hostAAnswering: 500, threshold: 1, cooldown: .seconds(60))
        _ = try await client.send(URLRequest(url: hostA))

        let (_, response) = try await client.send(URLRequest(url: hostB))

        #expect(response.statusCode == 200)
        #expect(breaker.state(for: hostA) == .open)
        #expect(breaker.state(for: hostB) == .closed(consecutiveFailures: 0))
        // Another port on the same host name is another host.
        #expect(breaker.state(for: URL(string: "https://a.example.test:8443/")!) == .closed(consecutiveFailures: 0))
    }

    @Test(
        "by default, transport errors and 5xx are failures; 4xx and 2xx are not",
        arguments: [
            (MockResponse.failure(URLError(.cannotConnectToHost)), true),
            (.status(500), true),
            (.status(503), true),
            (.status(404), false),
            (.status(429), false),
            (.ok, false),
        ]
    )
    func defaultFailures(reply: MockResponse, isFailure: Bool) async throws {
        let breaker = CircuitBreaker(.init(failureThreshold: 1), clock: clock)
        let client = Client(transport: MockTransport(reply), middleware: [.circuitBreaker(breaker)])
        let url = URL(string: "https://a.example.test/")!

        _ = try? await client.send(URLRequest(url: url))

        #expect(breaker.state(for: url) == (isFailure ? .open : .closed(consecutiveFailures: 0)))
    }

    @Test(
        "the default failure test counts timeouts and 5xx status errors, not 4xx status errors or other errors",
        arguments: [
            (CourierError(.timedOut, message: "t"), true),
            (CourierError(.transport, message: "t"), true),
            (CourierError(.nonHTTPResponse, message: "t"), true),
            (CourierError(.unacceptableStatus, message: "s", response: Self.response(503)), true),
            (CourierError(.unacceptableStatus, message: "s", response: Self.response(409)), false),
            (CourierError(.decodingFailed, message: "d"), false),
            (CourierError(.invalidRequest, message: "i"), false),
        ]
    )
    func defaultFailureTest(error: CourierError, isFailure: Bool) {
        #expect(CircuitBreaker.Policy.isTransportOrServerFailure(.failure(error)) == isFailure)
    }

    private static func response(_ status: Int) -> HTTPURLResponse {
        HTTPURLResponse(
            url: URL(string: "https://a.example.test/")!,
            statusCode: status,
            httpVersion: nil,
            headerFields: nil
        )!
    }

    @Test("a cancelled request is not a failure", .timeLimit(.minutes(1)))
    func cancellationIsNeutral() async throws {
        let arrived = Arrivals()
        let transport = MockTransport.hanging(counting: arrived)
        let breaker = CircuitBreaker(.init(failureThreshold: 1), clock: clock)
        let client = Client(transport: transport, middleware: [.circuitBreaker(breaker)])
        let task = Task { try await client.send(URLRequest(url: hostA)) }
        await arrived.wait(for: 1)

        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(breaker.state(for: hostA) == .closed(consecutiveFailures: 0))
    }

    @Test("what counts as a failure is configurable")
    func customFailures() async throws {
        let transport = MockTransport(.status(429))
        let middleware = Middleware.circuitBreaker(
            failureThreshold: 2,
            cooldown: .seconds(1),
            isFailure: { outcome in
                if case .success(let response) = outcome, response.statusCode == 429 { return true }
                return CircuitBreaker.Policy.isTransportOrServerFailure(outcome)
            },
            clock: clock
        )
        let client = Client(transport: transport, middleware: [middleware])
        for _ in 0..<2 { _ = try await client.send(URLRequest(url: hostA)) }

        let error = await #expect(throws: CourierError.self) { try await client.send(URLRequest(url: hostA)) }

        #expect(error?.code == .circuitOpen)
        #expect(transport.callCount == 2)
    }

    @Test("state changes are reported in order: open, half-open, closed")
    func reportsStateChanges() async throws {
        let changes = Locked<[String]>([])
        upstream.set(500, for: hostA)
        let breaker = CircuitBreaker(.init(failureThreshold: 1, cooldown: .seconds(1)), clock: clock) { host, state in
            changes.withLock { $0.append("\(host) \(state)") }
        }
        let client = Client(transport: upstream.transport, middleware: [.circuitBreaker(breaker)])

        _ = try await client.send(URLRequest(url: hostA))
        clock.advance(by: .seconds(1))
        upstream.set(200, for: hostA)
        _ = try await client.send(URLRequest(url: hostA))

        #expect(
            changes.value == [
                "a.example.test:443 open", "a.example.test:443 half-open", "a.example.test:443 closed(0)",
            ]
        )
    }
}
