import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Middleware.hedging", .timeLimit(.minutes(1)))
struct HedgingTests {
    private let url = URL(string: "https://api.example.test/search")!
    private let clock = ManualClock()
    /// Counts the calls that reach the transport.
    private let arrived = Arrivals()
    /// Counts the attempts that fail, as their errors go back to the hedging layer (see `countingFailures`).
    private let failed = Arrivals()
    /// Holds back the attempt a test answers last.
    private let release = Gate()

    private func body(_ result: (Data, HTTPURLResponse)) -> String {
        String(decoding: result.0, as: UTF8.self)
    }

    /// A middleware for between the hedging layer and the transport: counts each attempt that fails, as its
    /// error goes back to the hedging layer.
    private var countingFailures: Middleware {
        Middleware { [failed] request, next in
            do {
                return try await next(request)
            } catch {
                failed.arrive()
                throw error
            }
        }
    }

    /// A transport that counts each call in `arrived`, answers the first call with `first` and the others with
    /// `later`.
    private func attempts(
        first: @escaping @Sendable () async throws -> MockResponse,
        later: @escaping @Sendable () async throws -> MockResponse
    ) -> MockTransport {
        MockTransport { [arrived] _ in
            arrived.arrive()
            return try await arrived.count == 1 ? first() : later()
        }
    }

    /// Starts a GET through `.hedging(after: delay)` on the suite's clock, with `inner` between it and
    /// `transport`, and lets the delay pass once the hedging layer waits on it, so that the first hedge goes out.
    private func sendAndHedge(
        over transport: any Transport,
        after delay: Duration = .seconds(1),
        maxExtraAttempts: Int = 1,
        inner: [Middleware] = []
    ) async -> Task<(Data, HTTPURLResponse), any Error> {
        let hedging = Middleware.hedging(after: delay, maxExtraAttempts: maxExtraAttempts, clock: clock)
        let client = Client(transport: transport, middleware: [hedging] + inner)
        let call = Task { [url] in try await client.send(URLRequest(url: url)) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: delay)
        return call
    }

    /// Checks how many attempts reached the transport and how many of them were cancelled.
    private func expectAttempts(
        _ sent: Int,
        cancelled: Int,
        on transport: MockTransport,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(transport.callCount == sent, "attempts sent", sourceLocation: sourceLocation)
        #expect(transport.cancellationCount == cancelled, "attempts cancelled", sourceLocation: sourceLocation)
    }

    @Test("with no response after the delay, a second attempt is sent; it wins and the first is cancelled")
    func hedgeWinsLoserCancelled() async throws {
        let transport = MockTransport(.hang, then: .status(200, body: "second"))

        let result = try await sendAndHedge(over: transport, after: .milliseconds(100)).value

        #expect(body(result) == "second")
        // The call returns only after the loser has ended, so the transport has seen the cancellation.
        expectAttempts(2, cancelled: 1, on: transport)
    }

    @Test("when the first attempt answers after the hedge was sent, it wins and the hedge is cancelled")
    func primaryWinsHedgeCancelled() async throws {
        let transport = attempts {
            await release.wait()
            return .status(200, body: "first")
        } later: {
            try await waitForCancellation()
            return .ok
        }

        let call = await sendAndHedge(over: transport)
        await arrived.wait(for: 2)
        release.open()
        let result = try await call.join()

        #expect(body(result) == "first")
        expectAttempts(2, cancelled: 1, on: transport)  // the hedge, waiting in the mock, was cancelled
    }

    @Test("a fast response sends no hedge and leaves no timer behind")
    func fastResponseNoHedge() async throws {
        let transport = MockTransport.ok
        let client = Client(transport: transport, middleware: [.hedging(after: .seconds(1), clock: clock)])

        _ = try await client.send(URLRequest(url: url))

        #expect(transport.callCount == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test(
        """
        requests that are not idempotent are never hedged, nor one with an Idempotency-Key (a second copy in \
        flight would get a 409)
        """,
        arguments: [("POST", nil), ("PATCH", nil), ("PUT", "a1b2c3"), ("GET", "d4e5f6")] as [(String, String?)]
    )
    func passesThrough(method: String, idempotencyKey: String?) async throws {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        let transport = try await sendHeld(request, through: [.hedging(after: .zero, clock: clock)])
        #expect(transport.callCount == 1)
        #expect(clock.totalSleeps == 0)
    }

    /// Sends `request` through `middleware` to a transport that holds it until it arrived, and returns that
    /// transport once the call is over.
    private func sendHeld(_ request: URLRequest, through middleware: [Middleware]) async throws -> MockTransport {
        let transport = MockTransport.held(by: release, counting: arrived)
        let client = Client(transport: transport, middleware: middleware)
        let call = Task { try await client.send(request) }
        await arrived.wait(for: 1)
        release.open()
        _ = try await call.join()
        return transport
    }

    @Test(
        "a request keyed under another header name by an idempotencyKey layer outside is not hedged either",
        arguments: [nil, "caller-key"] as [String?]
    )
    func customKeyHeaderPassesThrough(callersKey: String?) async throws {
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        request.setValue(callersKey, forHTTPHeaderField: "X-Idempotency-Key")
        let transport = try await sendHeld(
            request,
            through: [
                .idempotencyKey(header: "X-Idempotency-Key", methods: [.put]), .hedging(after: .zero, clock: clock),
            ]
        )
        #expect(transport.callCount == 1)
        #expect(clock.totalSleeps == 0)
        // The caller's own key goes as it was.
        if let callersKey {
            #expect(transport.requests.first?.value(forHTTPHeaderField: "X-Idempotency-Key") == callersKey)
        }
    }

    @Test("up to maxExtraAttempts hedges are sent, each a delay after the previous")
    func severalHedges() async throws {
        let transport = MockTransport { [arrived] _ in
            arrived.arrive()
            if arrived.count == 3 { return .status(200, body: "third") }
            try await waitForCancellation()
            return .ok
        }

        let call = await sendAndHedge(over: transport, maxExtraAttempts: 2)
        await arrived.wait(for: 2)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        let result = try await call.join()

        #expect(body(result) == "third")
        expectAttempts(3, cancelled: 2, on: transport)
        #expect(clock.totalSleeps == 2)
    }

    @Test("an attempt that fails while another is in flight does not end the call")
    func failedAttemptDoesNotEndTheCall() async throws {
        let transport = attempts {
            await arrived.wait(for: 2)
            throw URLError(.networkConnectionLost)
        } later: {
            await release.wait()
            return .status(200, body: "second")
        }

        let call = await sendAndHedge(over: transport, inner: [countingFailures])
        await failed.wait(for: 1)
        release.open()
        let result = try await call.join()

        #expect(body(result) == "second")
        #expect(transport.callCount == 2)
    }

    @Test("when every attempt fails, the original request's error is thrown")
    func allAttemptsFail() async throws {
        let transport = attempts {
            await release.wait()
            throw URLError(.timedOut)
        } later: {
            throw URLError(.networkConnectionLost)
        }

        let call = await sendAndHedge(over: transport, inner: [countingFailures])
        // The hedge fails first; the call goes on waiting for the original request.
        await failed.wait(for: 1)
        release.open()
        let error = await #expect(throws: CourierError.self) { try await call.join() }

        #expect(transport.callCount == 2)
        #expect((error?.underlying as? URLError)?.code == .timedOut)
    }

    @Test("cancelling the caller cancels every attempt and throws CancellationError")
    func callerCancelled() async throws {
        let transport = MockTransport.hanging(counting: arrived)

        let call = await sendAndHedge(over: transport)
        await arrived.wait(for: 2)
        call.cancel()

        await #expect(throws: CancellationError.self) { try await call.join() }
        expectAttempts(2, cancelled: 2, on: transport)
    }
}
