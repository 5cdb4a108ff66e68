import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A behavior that writes every hook it sees into a shared log.
private struct TracingBehavior: RequestBehavior {
    let name: String
    let log: Locked<[String]>
    var headers: HTTPHeaders = [:]
    var failBeforeSend = false

    var additionalHeaders: HTTPHeaders { headers }

    func beforeSend(_ request: inout URLRequest) async throws {
        let seen = request.value(forHTTPHeaderField: "X-Seen") ?? ""
        log.withLock { $0.append("\(name).before[\(seen)]") }
        request.setValue(seen + name, forHTTPHeaderField: "X-Seen")
        if failBeforeSend { throw BehaviorFailure(name: name) }
    }

    func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async {
        log.withLock { $0.append("\(name).success(\(response.statusCode))") }
    }

    func afterFailure(_ error: any Error, for request: URLRequest) async {
        log.withLock { $0.append("\(name).failure") }
    }

    func afterCancellation(for request: URLRequest) async {
        log.withLock { $0.append("\(name).cancelled") }
    }
}

private struct BehaviorFailure: Error, Equatable {
    var name: String
}

/// A behavior that implements nothing: every hook has a default.
private struct NothingBehavior: RequestBehavior {}

@Suite("request behaviors")
struct RequestBehaviorTests {
    private func tracingTransport(_ log: Locked<[String]>, _ response: MockResponse = .ok) -> MockTransport {
        MockTransport { request in
            log.withLock { $0.append("transport[\(request.header("X-Seen") ?? "")]") }
            return response
        }
    }

    @Test("a behavior that implements nothing compiles and leaves the request alone")
    func emptyBehavior() async throws {
        for middleware in [Middleware.behavior(NothingBehavior()), .behavior(EmptyBehavior())] {
            let transport = MockTransport.ok
            let client = makeClient(transport, [middleware])
            var request = URLRequest(url: testURL)
            request.setValue("1", forHTTPHeaderField: "X-One")
            let (_, response) = try await client.send(request)
            #expect(response.statusCode == 200)
            #expect(transport.requests.first?.allHTTPHeaderFields == ["X-One": "1"])
            #expect(middleware.name == "behavior")
        }
    }

    @Test("additional headers are set before beforeSend, and afterSuccess sees the request as sent")
    func singleBehaviorOrder() async throws {
        struct HeaderThenHook: RequestBehavior {
            let seenInBeforeSend: Locked<String?>
            let seenAfter: Locked<String?>
            var additionalHeaders: HTTPHeaders { ["X-Request-ID": "req-1", "Accept": "application/json"] }
            func beforeSend(_ request: inout URLRequest) async throws {
                seenInBeforeSend.withLock { $0 = request.value(forHTTPHeaderField: "X-Request-ID") }
                request.setValue("stamped", forHTTPHeaderField: "X-Stamp")
            }
            func afterSuccess(_ response: HTTPURLResponse, data: Data, for request: URLRequest) async {
                seenAfter.withLock { $0 = request.value(forHTTPHeaderField: "X-Stamp") }
            }
        }
        let before = Locked<String?>(nil)
        let after = Locked<String?>(nil)
        let transport = MockTransport.ok
        let client = makeClient(transport, [.behavior(HeaderThenHook(seenInBeforeSend: before, seenAfter: after))])
        var request = URLRequest(url: testURL)
        request.setValue("text/html", forHTTPHeaderField: "Accept")
        _ = try await client.send(request)
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "X-Request-ID") == "req-1")
        #expect(sent.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(sent.value(forHTTPHeaderField: "X-Stamp") == "stamped")
        #expect(before.value == "req-1")
        #expect(after.value == "stamped")
    }

    @Test("combined behaviors run beforeSend in order and the after-hooks in reverse order")
    func combinedOrder() async throws {
        let log = Locked<[String]>([])
        let combined = CombinedBehavior(
            TracingBehavior(name: "a", log: log),
            TracingBehavior(name: "b", log: log),
            TracingBehavior(name: "c", log: log)
        )
        let client = makeClient(tracingTransport(log, .status(204)), [.behavior(combined)])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(
            log.value == [
                "a.before[]", "b.before[a]", "c.before[ab]", "transport[abc]",
                "c.success(204)", "b.success(204)", "a.success(204)",
            ]
        )
    }

    @Test("a later behavior's header replaces an earlier one's")
    func combinedHeaders() async throws {
        let log = Locked<[String]>([])
        let combined: CombinedBehavior = [
            TracingBehavior(name: "a", log: log, headers: ["X-Tier": "a", "X-A": "1"]),
            TracingBehavior(name: "b", log: log, headers: ["x-tier": "b"]),
        ].combined()
        let transport = MockTransport.ok
        let client = makeClient(transport, [.behavior(combined)])
        _ = try await client.send(URLRequest(url: testURL))
        let sent = try #require(transport.requests.first)
        #expect(sent.value(forHTTPHeaderField: "X-Tier") == "b")
        #expect(sent.value(forHTTPHeaderField: "X-A") == "1")

        let merged = combined.additionalHeaders
        #expect(merged.values(for: "X-Tier") == ["b"])
        #expect(merged["X-A"] == "1")
    }

    @Test(
        "installed, a combined behavior runs exactly like its behaviors installed one after another",
        arguments: ["success", "transport failure", "beforeSend failure"]
    )
    func combinedEqualsSeparate(scenario: String) async throws {
        func run(_ combine: Bool) async -> [String] {
            let log = Locked<[String]>([])
            let behaviors: [any RequestBehavior] = [
                TracingBehavior(name: "a", log: log),
                TracingBehavior(name: "b", log: log, failBeforeSend: scenario == "beforeSend failure"),
                TracingBehavior(name: "c", log: log),
            ]
            let transport: MockTransport =
                scenario == "transport failure"
                ? MockTransport(.failure(BehaviorFailure(name: "transport"))) : tracingTransport(log)
            let middleware = combine ? [.behavior(behaviors.combined())] : behaviors.map { Middleware.behavior($0) }
            _ = try? await makeClient(transport, middleware).send(URLRequest(url: testURL))
            return log.value
        }
        let separate = await run(false)
        let combined = await run(true)
        #expect(combined == separate)
        #expect(!combined.isEmpty)
    }

    @Test("a throwing beforeSend stops the request: later behaviors skip, earlier ones hear the failure")
    func beforeSendThrows() async throws {
        let log = Locked<[String]>([])
        let transport = tracingTransport(log)
        let combined = CombinedBehavior(
            TracingBehavior(name: "a", log: log),
            TracingBehavior(name: "b", log: log, failBeforeSend: true),
            TracingBehavior(name: "c", log: log)
        )
        let client = makeClient(transport, [.behavior(combined)])
        await #expect(throws: BehaviorFailure(name: "b")) { try await client.send(URLRequest(url: testURL)) }
        #expect(transport.callCount == 0)
        #expect(log.value == ["a.before[]", "b.before[a]", "b.failure", "a.failure"])
    }

    @Test("a failure reaches afterFailure, not afterSuccess, and is passed on unchanged")
    func failureHook() async throws {
        let log = Locked<[String]>([])
        let client = makeClient(
            MockTransport(.status(500)),
            [.behavior(TracingBehavior(name: "a", log: log)), .validatingStatus()]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .unacceptableStatus)
        #expect(error.middleware == "validatingStatus")
        #expect(log.value == ["a.before[]", "a.failure"])
    }

    @Test("a response with an error status that nothing validated is a success")
    func unvalidatedErrorStatus() async throws {
        let log = Locked<[String]>([])
        let client = makeClient(MockTransport(.status(503)), [.behavior(TracingBehavior(name: "a", log: log))])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(log.value == ["a.before[]", "a.success(503)"])
    }

    @Test("cancellation reaches afterCancellation, never afterFailure", .timeLimit(.minutes(1)))
    func cancellationHook() async throws {
        let log = Locked<[String]>([])
        let arrived = Arrivals()
        let transport = MockTransport.hanging(counting: arrived)
        let combined = CombinedBehavior(TracingBehavior(name: "a", log: log), TracingBehavior(name: "b", log: log))
        let client = makeClient(transport, [.behavior(combined)])
        await expectCancellation(sending: URLRequest(url: testURL), through: client, arrived: arrived)
        #expect(log.value == ["a.before[]", "b.before[a]", "b.cancelled", "a.cancelled"])
    }

    @Test(
        "a request that timed out reaches afterFailure with timedOut, whether the timeout is above or below the behavior",
        .timeLimit(.minutes(1)),
        arguments: [true, false]
    )
    func timeoutIsAFailure(timeoutAbove: Bool) async throws {
        let log = Locked<[String]>([])
        let arrived = Arrivals()
        let clock = ManualClock()
        let behavior = Middleware.behavior(TracingBehavior(name: "a", log: log))
        let timeout = Middleware.timeout(.seconds(1), clock: clock)
        let client = makeClient(
            MockTransport.hanging(counting: arrived),
            timeoutAbove ? [timeout, behavior] : [behavior, timeout]
        )
        let call = Task { try await client.send(URLRequest(url: testURL)) }
        await arrived.wait(for: 1)
        clock.advance(by: .seconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(log.value == ["a.before[]", "a.failure"])
    }

    @Test(
        "an invalid additional header fails before anything is sent, and the behavior hears the failure",
        arguments: [("X-Evil", "a\r\nX-Injected: 1"), ("Bad Name", "v")]
    )
    func invalidAdditionalHeader(name: String, value: String) async throws {
        let log = Locked<[String]>([])
        let transport = MockTransport.ok
        let client = makeClient(
            transport,
            [.behavior(TracingBehavior(name: "a", log: log, headers: [name: value]))]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .invalidRequest)
        #expect(error.middleware == "behavior")
        #expect(transport.callCount == 0)
        #expect(log.value == ["a.failure"])
    }

    @Test("nested combined behaviors are flattened")
    func flattening() {
        let log = Locked<[String]>([])
        let inner = CombinedBehavior(TracingBehavior(name: "a", log: log), TracingBehavior(name: "b", log: log))
        let outer = CombinedBehavior(inner, TracingBehavior(name: "c", log: log), CombinedBehavior())
        #expect(outer.behaviors.compactMap { ($0 as? TracingBehavior)?.name } == ["a", "b", "c"])
        #expect(outer.behaviors.count == 3)
    }

    @Test("used directly, a combined behavior's hooks run every behavior, after-hooks in reverse")
    func directUse() async throws {
        let log = Locked<[String]>([])
        let combined = CombinedBehavior(TracingBehavior(name: "a", log: log), TracingBehavior(name: "b", log: log))
        var request = URLRequest(url: testURL)
        try await combined.beforeSend(&request)
        let response = HTTPURLResponse(url: testURL, statusCode: 200, httpVersion: nil, headerFields: nil)!
        await combined.afterSuccess(response, data: Data(), for: request)
        await combined.afterFailure(BehaviorFailure(name: "x"), for: request)
        await combined.afterCancellation(for: request)
        #expect(
            log.value == [
                "a.before[]", "b.before[a]", "b.success(200)", "a.success(200)", "b.failure", "a.failure",
                "b.cancelled", "a.cancelled",
            ]
        )
        #expect(request.value(forHTTPHeaderField: "X-Seen") == "ab")
    }
}
