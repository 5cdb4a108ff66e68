import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A clock whose sleep ends only when its gate opens, cancelled or not: a backoff that ends normally after the
/// caller went away.
private struct GatedClock: Clock {
    let gate: Gate
    let sleeping: Arrivals
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        sleeping.arrive()
        await gate.wait()
    }
}

@Suite("Retry", .timeLimit(.minutes(1)))
struct RetryTests {
    @Test("a retryable status is retried and the later success is returned")
    func retriesStatus() async throws {
        let transport = MockTransport(.status(503), then: .status(502), .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 200)
        #expect(transport.callCount == 3)
    }

    @Test("when no attempts are left, the last retryable response is returned as it is")
    func lastResponseReturned() async throws {
        let transport = MockTransport(.status(503, body: "busy"))
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy(attempts: 4))])
        let (data, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 503)
        #expect(String(decoding: data, as: UTF8.self) == "busy")
        #expect(transport.callCount == 4)
    }

    @Test("a status that is not retryable is returned after one attempt", arguments: [200, 201, 400, 401, 404, 501])
    func otherStatusNotRetried(status: Int) async throws {
        let transport = MockTransport(.status(status))
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == status)
        #expect(transport.callCount == 1)
    }

    @Test("the default retryable statuses are 408, 429, 500, 502, 503 and 504")
    func defaultStatuses() {
        #expect(RetryPolicy.default.retryableStatuses == [408, 429, 500, 502, 503, 504])
        #expect(RetryPolicy.default.maximumAttempts == 3)
    }

    @Test("an unacceptable-status error from a validation layer inside is retried on its status")
    func validationErrorRetried() async throws {
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryFixtures.policy()), .validatingStatus()]
        )
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 200)
        #expect(transport.callCount == 2)
    }

    @Test(
        "the validation layer's error is rethrown unchanged, on the last attempt or at once if not retryable",
        arguments: [(status: 503, attempts: 3), (status: 404, attempts: 1)]
    )
    func validationErrorRethrown(status: Int, attempts: Int) async throws {
        let transport = MockTransport(.status(status))
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryFixtures.policy()), .validatingStatus()]
        )
        let error = await #expect(throws: CourierError.self) {
            try await client.send(RetryFixtures.request())
        }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.statusCode == status)
        #expect(error?.middleware == "validatingStatus")
        #expect(transport.callCount == attempts)
    }

    @Test("validation outside the retry sees the last response once the attempts are used up")
    func validationOutside() async throws {
        let transport = MockTransport(.status(503))
        let client = Client(
            transport: transport,
            middleware: [.validatingStatus(), .retry(RetryFixtures.policy())]
        )
        let error = await #expect(throws: CourierError.self) {
            try await client.send(RetryFixtures.request())
        }
        #expect(error?.statusCode == 503)
        #expect(transport.callCount == 3)
    }

    @Test(
        "a transient transport error is retried",
        arguments: [
            URLError.Code.networkConnectionLost, .cannotConnectToHost, .timedOut, .cannotFindHost, .dnsLookupFailed,
            .notConnectedToInternet,
        ]
    )
    func transientErrorRetried(code: URLError.Code) async throws {
        let transport = MockTransport(.failure(URLError(code)), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 200)
        #expect(transport.callCount == 2)
    }

    @Test(
        "a transport error that is not transient is thrown at once",
        arguments: [URLError.Code.badURL, .cancelled, .badServerResponse, .serverCertificateUntrusted, .unsupportedURL]
    )
    func permanentErrorNotRetried(code: URLError.Code) async throws {
        let transport = MockTransport(.failure(URLError(code)), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let error = await #expect(throws: CourierError.self) {
            try await client.send(RetryFixtures.request())
        }
        #expect(error?.code == .transport)
        #expect((error?.underlying as? URLError)?.code == code)
        #expect(transport.callCount == 1)
    }

    @Test("when no attempts are left, the last transient error is rethrown")
    func lastErrorRethrown() async throws {
        let transport = MockTransport(.failure(URLError(.networkConnectionLost)))
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let error = await #expect(throws: CourierError.self) {
            try await client.send(RetryFixtures.request())
        }
        #expect((error?.underlying as? URLError)?.code == .networkConnectionLost)
        #expect(transport.callCount == 3)
    }

    @Test("an error of a user's own type is not retried by default, and is when the policy says so")
    func customErrorPredicate() async throws {
        struct Flaky: Error {}
        let transport = MockTransport(.failure(Flaky()), then: .ok)
        let strict = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        await #expect(throws: CourierError.self) { try await strict.send(RetryFixtures.request()) }
        #expect(transport.callCount == 1)

        let again = MockTransport(.failure(Flaky()), then: .ok)
        var policy = RetryFixtures.policy()
        policy.isRetryable = { error in
            RetryPolicy.isTransient(error) || ((error as? CourierError)?.underlying is Flaky)
        }
        let lenient = Client(transport: again, middleware: [.retry(policy)])
        let (_, response) = try await lenient.send(RetryFixtures.request())
        #expect(response.statusCode == 200)
        #expect(again.callCount == 2)
    }

    @Test("a CancellationError is never retried")
    func cancellationNotRetried() async throws {
        let transport = MockTransport(.failure(CancellationError()), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        await #expect(throws: CancellationError.self) { try await client.send(RetryFixtures.request()) }
        #expect(transport.callCount == 1)
    }

    @Test("cancelling the caller during a backoff throws CancellationError at once and sends nothing more")
    func cancelDuringBackoff() async throws {
        let clock = ManualClock()
        let transport = MockTransport(.status(503))
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryFixtures.policy(backoff: .constant(.seconds(10))), clock: clock)]
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(clock.now.offset == .zero)
        #expect(clock.sleeperCount == 0)
        clock.advance(by: .seconds(60))
        #expect(transport.callCount == 1)
    }

    @Test(
        "a caller cancelled during a backoff that then ends normally gets CancellationError, and nothing more is sent"
    )
    func cancelledWhenBackoffEnds() async throws {
        let clock = GatedClock(gate: Gate(), sleeping: Arrivals())
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryFixtures.policy(backoff: .constant(.seconds(10))), clock: clock)]
        )
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.sleeping.wait(for: 1)
        task.cancel()
        clock.gate.open()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(transport.callCount == 1)
    }

    @Test(
        "by default idempotent methods are retried, POST and PATCH (in any case) are not",
        arguments: [
            ("GET", true), ("HEAD", true), ("OPTIONS", true), ("PUT", true), ("DELETE", true), ("TRACE", true),
            ("POST", false), ("PATCH", false), ("post", false),
        ]
    )
    func retriedByMethod(method: String, retried: Bool) async throws {
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request(method))
        #expect(response.statusCode == (retried ? 200 : 503))
        #expect(transport.callCount == (retried ? 2 : 1))
    }

    @Test("a POST that fails at the transport is not retried either")
    func postTransportErrorNotRetried() async throws {
        let transport = MockTransport(.failure(URLError(.networkConnectionLost)), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        await #expect(throws: CourierError.self) { try await client.send(RetryFixtures.request("POST")) }
        #expect(transport.callCount == 1)
    }

    @Test("a POST with an Idempotency-Key is retried, with the same key on every attempt")
    func postWithKeyRetried() async throws {
        let transport = MockTransport(.status(503), then: .status(500), .ok)
        let client = Client(transport: transport, middleware: [.idempotencyKey(), .retry(RetryFixtures.policy())])
        let (_, response) = try await client.send(RetryFixtures.request("POST"))
        #expect(response.statusCode == 200)
        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        #expect(keys.count == 3)
        let key = try #require(keys.first ?? nil)
        #expect(!key.isEmpty)
        #expect(keys.allSatisfy { $0 == key })
    }

    @Test("a POST carrying its own key is retried with that key")
    func postWithOwnKey() async throws {
        let transport = MockTransport(.status(503), then: .ok)
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy())])
        _ = try await client.send(RetryFixtures.request("POST", headers: ["Idempotency-Key": "order-17"]))
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") } == ["order-17", "order-17"])
    }

    @Test("a PATCH is retried when the policy opts in")
    func optIn() async throws {
        let transport = MockTransport(.status(503), then: .ok)
        var policy = RetryFixtures.policy()
        policy.retriesNonIdempotentRequests = true
        let client = Client(transport: transport, middleware: [.retry(policy)])
        let (_, response) = try await client.send(RetryFixtures.request("PATCH"))
        #expect(response.statusCode == 200)
        #expect(transport.callCount == 2)
    }

    @Test("the hook hears each retry's attempt, delay and reason before the backoff")
    func hook() async throws {
        let clock = ManualClock()
        let events = Locked<[RetryEvent]>([])
        let transport = MockTransport(.status(503), then: .failure(URLError(.timedOut)), .ok)
        let policy = RetryFixtures.policy(backoff: .constant(.seconds(1))) { event in
            events.withLock { $0.append(event) }
        }
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(events.value.count == 1)
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(count: 1)
        #expect(events.value.count == 2)
        clock.advance(by: .seconds(1))
        let (_, response) = try await task.join()
        #expect(response.statusCode == 200)

        let recorded = events.value
        #expect(recorded.map(\.attempt) == [2, 3])
        #expect(recorded.map(\.maximumAttempts) == [3, 3])
        #expect(recorded.map(\.delay) == [.seconds(1), .seconds(1)])
        #expect(recorded.map(\.retryAfter) == [nil, nil])
        try #require(recorded.count == 2)
        guard case .status(503) = recorded[0].reason else {
            Issue.record("the first reason is \(recorded[0].reason)")
            return
        }
        guard case .error(let error) = recorded[1].reason else {
            Issue.record("the second reason is \(recorded[1].reason)")
            return
        }
        #expect(((error as? CourierError)?.underlying as? URLError)?.code == .timedOut)
        #expect(recorded[0].request.url == RetryFixtures.request().url)
    }

    @Test("layers inside the retry see the attempt number; outside there is no retry context")
    func attemptContext() async throws {
        let inside = Locked<[Int]>([])
        let outside = Locked<[RetryContext?]>([])
        let transport = MockTransport(.status(503))
        let client = Client(
            transport: transport,
            middleware: [
                Middleware { request, next in
                    outside.withLock { $0.append(RetryContext.current) }
                    return try await next(request)
                },
                .retry(RetryFixtures.policy()),
                RetryFixtures.recordingAttempts(into: inside),
            ]
        )
        _ = try await client.send(RetryFixtures.request())
        #expect(inside.value == [1, 2, 3])
        #expect(outside.value == [nil])
    }

    @Test("the retry context carries the policy's maximum and knows a retry from a first attempt")
    func contextValues() async throws {
        let contexts = Locked<[RetryContext]>([])
        let client = Client(
            transport: MockTransport(.status(500), then: .ok),
            middleware: [
                .retry(RetryFixtures.policy(attempts: 5)),
                Middleware { request, next in
                    if let context = RetryContext.current { contexts.withLock { $0.append(context) } }
                    return try await next(request)
                },
            ]
        )
        _ = try await client.send(RetryFixtures.request())
        #expect(
            contexts.value == [
                RetryContext(attempt: 1, maximumAttempts: 5), RetryContext(attempt: 2, maximumAttempts: 5),
            ]
        )
        #expect(contexts.value.map(\.isRetry) == [false, true])
    }

    @Test("one attempt means no retry at all")
    func singleAttempt() async throws {
        let transport = MockTransport(.status(503))
        let client = Client(transport: transport, middleware: [.retry(RetryFixtures.policy(attempts: 1))])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
    }
}

@Suite("RetryPolicy.isTransient")
struct TransientErrorTests {
    private static let request = RetryFixtures.request()

    @Test("transient errors, bare or wrapped by the chain")
    func transient() {
        #expect(RetryPolicy.isTransient(URLError(.networkConnectionLost)))
        #expect(RetryPolicy.isTransient(POSIXError(.ECONNRESET)))
        #expect(RetryPolicy.isTransient(POSIXError(.ECONNREFUSED)))
        #expect(
            RetryPolicy.isTransient(
                CourierError(.transport, message: "x", request: Self.request, underlying: URLError(.cannotFindHost))
            )
        )
        #expect(RetryPolicy.isTransient(CourierError(.timedOut, message: "per attempt", request: Self.request)))
    }

    @Test("everything else is not transient")
    func notTransient() {
        struct Other: Error {}
        #expect(!RetryPolicy.isTransient(CancellationError()))
        #expect(!RetryPolicy.isTransient(URLError(.cancelled)))
        #expect(!RetryPolicy.isTransient(URLError(.secureConnectionFailed)))
        #expect(!RetryPolicy.isTransient(POSIXError(.EACCES)))
        #expect(!RetryPolicy.isTransient(Other()))
        #expect(
            !RetryPolicy.isTransient(
                CourierError(.transport, message: "x", request: Self.request, underlying: URLError(.badURL))
            )
        )
        #expect(!RetryPolicy.isTransient(CourierError(.decodingFailed, message: "x")))
        #expect(!RetryPolicy.isTransient(CourierError(.invalidRequest, message: "x")))
    }
    @Test(
        "a one-shot body the server asks to retry later than the cap, or past the deadline, ends with the last response",
        arguments: ["3600", "20"]
    )
    func oneShotBodyNotRetriedAnyway(_ retryAfter: String) async throws {
        let clock = ManualClock()
        let transport = MockTransport(.status(429, headers: ["Retry-After": retryAfter]))
        let client = Client(
            transport: transport,
            middleware: [.timeout(.seconds(10), clock: clock), .retry(RetryFixtures.policy(), clock: clock)]
        )
        var request = RetryFixtures.request("PUT")
        request.httpBodyStream = InputStream(data: Data("x".utf8))
        let (_, response) = try await clock.run { [request] in try await client.send(request) }
        #expect(response.statusCode == 429)
        #expect(transport.callCount == 1)
    }
}
