import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Helpers shared by the retry and timeout suites.
enum RetryFixtures {
    /// A request for `/items` with `method`.
    static func request(_ method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: exampleBaseURL.appendingPathComponent("items"))
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// A policy with no budget, no jitter and no waiting unless a test says otherwise.
    static func policy(
        attempts: Int = 3,
        backoff: RetryPolicy.Backoff = .immediate,
        onRetry: (@Sendable (RetryEvent) -> Void)? = nil
    ) -> RetryPolicy {
        RetryPolicy(maximumAttempts: attempts, backoff: backoff, budget: nil, onRetry: onRetry)
    }

    /// Expects `call` to fail with the timeout middleware's `timedOut` for `duration`, raised when `clock` showed
    /// `duration`.
    @discardableResult
    static func expectTimedOut(
        _ call: Task<(Data, HTTPURLResponse), any Error>,
        after duration: Duration,
        on clock: ManualClock,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> CourierError? {
        let error = await #expect(throws: CourierError.self, sourceLocation: sourceLocation) { try await call.join() }
        #expect(error?.code == .timedOut, sourceLocation: sourceLocation)
        #expect(error?.middleware == "timeout", sourceLocation: sourceLocation)
        #expect(error?.timeout == duration, sourceLocation: sourceLocation)
        #expect(clock.now.offset == duration, sourceLocation: sourceLocation)
        return error
    }

    /// Sends a request through `timeout` to a transport that answers 201 only after the timeout's timer sleeps on
    /// `clock`, and expects that answer, with nothing cancelled; returns the transport.
    @discardableResult
    static func expectAnsweredInTime(
        through timeout: Middleware,
        on clock: ManualClock,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> MockTransport {
        let gate = Gate()
        let transport = MockTransport(.status(201).held(until: gate))
        let client = Client(transport: transport, middleware: [timeout])
        let task = Task { try await client.send(request()) }
        await clock.waitForSleepers(count: 1)
        gate.open()
        let (_, response) = try await task.join()
        #expect(response.statusCode == 201, sourceLocation: sourceLocation)
        #expect(transport.cancellationCount == 0, sourceLocation: sourceLocation)
        return transport
    }

    /// Records `RetryContext.attempt` for every request that passes.
    static func recordingAttempts(into log: Locked<[Int]>) -> Middleware {
        Middleware { request, next in
            log.withLock { $0.append(RetryContext.attempt) }
            return try await next(request)
        }
    }
}

extension ManualClock {
    /// `count` times over: waits until `sleepers` tasks sleep on the clock, then moves it to the earliest deadline.
    func advanceThroughDeadlines(_ count: Int, sleepers: Int) async {
        for _ in 0..<count {
            await waitForSleepers(count: sleepers)
            advanceToNextDeadline()
        }
    }
}
