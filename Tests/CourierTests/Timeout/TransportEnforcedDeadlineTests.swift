import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that enforces the call's deadline itself, on a manual clock, the way AsyncHTTPClientTransport
/// does in real time: it answers at once, or holds the request until the deadline passes and then throws. It
/// records the task each request ran in and the deadline it saw.
private final class EnforcingTransport: DeadlineEnforcingTransport {
    enum Behavior: Sendable {
        case answer
        case holdUntilDeadline
        case fail
        /// Reads a body that never ends the way AsyncHTTPClientTransport does, through
        /// `TimeoutRunner.run(attachedTo:)`, until cancelled.
        case bodyUntilCancelled
    }

    struct Seen: Sendable {
        let task: Int?
        let timeout: Duration?
    }

    /// Whether each body read found its task attached to the deadline's work in the timeout's timer.
    let bodyReadsAttached = Locked<[Bool]>([])
    /// Opened when a body read has started.
    let bodyReadStarted = Gate()

    struct DeadlineExceeded: Error {}

    let clock: ManualClock
    let behavior: Behavior
    let seen = Locked<[Seen]>([])

    init(clock: ManualClock, behavior: Behavior = .answer) {
        self.clock = clock
        self.behavior = behavior
    }

    func enforces(_ deadline: Deadline) -> Bool { true }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let deadline = Deadline.current
        seen.withLock { $0.append(Seen(task: currentTaskID(), timeout: deadline?.timeout)) }
        switch behavior {
        case .answer:
            return (Data(), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!)
        case .holdUntilDeadline:
            let deadline = try #require(deadline)
            try await clock.sleep(for: deadline.timeLeft)
            throw DeadlineExceeded()
        case .fail:
            throw URLError(.networkConnectionLost)
        case .bodyUntilCancelled:
            let deadline = try #require(deadline)
            return try await TimeoutRunner.run(attachedTo: deadline, request: request) { request in
                let work = Deadline.current?.work
                let attached = work.map { $0.owner?.holdsTask($0) ?? false } ?? false
                self.bodyReadsAttached.withLock { $0.append(attached) }
                self.bodyReadStarted.open()
                try await Gate().waitUnlessCancelled()
                throw CancellationError()
            }
        }
    }
}

/// The identity of the task that calls it.
private func currentTaskID() -> Int? {
    withUnsafeCurrentTask { $0?.hashValue }
}

/// A way to build the layers below a timeout, and whether they leave the deadline to the transport.
struct LayersBelowTimeout: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let leavesDeadlineToTransport: Bool
    let make: @Sendable (ManualClock) -> [Middleware]

    static let all: [LayersBelowTimeout] = [
        LayersBelowTimeout(testDescription: "none", leavesDeadlineToTransport: true) { _ in [] },
        LayersBelowTimeout(testDescription: "the recommended stack's", leavesDeadlineToTransport: true) { clock in
            [
                .retry(.default),
                .authenticating(token: "t0ken-below-timeout"),
                .timeout(.seconds(2), clock: clock),
                .validatingStatus(),
            ]
        },
        LayersBelowTimeout(testDescription: "headers, counting, circuit breaker", leavesDeadlineToTransport: true) {
            _ in
            [.jsonHeaders, .counting(RequestCounter()), .circuitBreaker(CircuitBreaker()), .idempotencyKey()]
        },
        LayersBelowTimeout(testDescription: "logging, timing, redirects", leavesDeadlineToTransport: true) { _ in
            [.logging(to: LogSink { _ in }), .timing { _, _, _ in }, .followingRedirects()]
        },
        LayersBelowTimeout(testDescription: "a retry on a manual clock", leavesDeadlineToTransport: false) { clock in
            [.retry(.default, clock: clock)]
        },
        LayersBelowTimeout(testDescription: "a middleware of the caller's", leavesDeadlineToTransport: false) { _ in
            [.validatingStatus(), Middleware(name: "mine") { request, next in try await next(request) }]
        },
        LayersBelowTimeout(testDescription: "a token provider", leavesDeadlineToTransport: false) { _ in
            [.authenticating(tokenProvider: { "t0ken-from-provider" })]
        },
        LayersBelowTimeout(testDescription: "a renamed built-in", leavesDeadlineToTransport: true) { _ in
            [Middleware.validatingStatus().named("status")]
        },
    ]
}

@Suite("A timeout over a transport that enforces deadlines", .timeLimit(.minutes(1)))
struct TransportEnforcedDeadlineTests {
    private let clock = ManualClock()

    @Test(
        "the chain below a timeout runs in the caller's task only when every layer below waits within the deadline",
        arguments: LayersBelowTimeout.all,
        TimerKind.allCases
    )
    func pathChosen(layers: LayersBelowTimeout, kind: TimerKind) async throws {
        let transport = EnforcingTransport(clock: clock)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [kind.timeout(.seconds(10), clock: clock)] + layers.make(clock)
        )
        let caller = try await Task {
            _ = try await client.send(RetryFixtures.request())
            return currentTaskID()
        }.value
        let seen = try #require(transport.seen.value.first)
        #expect((seen.task == caller) == layers.leavesDeadlineToTransport)
        // Either way the transport sees the nearest deadline.
        #expect(seen.timeout != nil)
    }

    @Test("a transport that does not enforce deadlines always runs below a child task", arguments: TimerKind.allCases)
    func ordinaryTransport(kind: TimerKind) async throws {
        let seen = Locked<Int?>(nil)
        let transport = MockTransport { _ in
            seen.withLock { $0 = currentTaskID() }
            return .ok
        }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [kind.timeout(.seconds(10), clock: clock)]
        )
        let caller = try await Task {
            _ = try await client.send(RetryFixtures.request())
            return currentTaskID()
        }.value
        #expect(seen.value != nil)
        #expect(seen.value != caller)
    }

    @Test(
        "the transport's failure at the deadline is the timeout's timedOut, with its duration",
        arguments: TimerKind.allCases
    )
    func failureAtDeadline(kind: TimerKind) async throws {
        let transport = EnforcingTransport(clock: clock, behavior: .holdUntilDeadline)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [kind.timeout(.seconds(3), clock: clock)]
        )
        let call = Task { try await client.send(RetryFixtures.request()) }
        // The transport sleeps until the deadline; a shared timer's driver too, for the work it armed for a body
        // read (which never comes here): the timeout started no timer of its own.
        let sleepers = kind == .shared ? 2 : 1
        await clock.waitForSleepers(count: sleepers)
        #expect(clock.sleeperCount == sleepers)
        clock.advance(by: .seconds(3))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(3))
        #expect(error.middleware == "timeout")
    }

    @Test("a body still arriving is cancelled at the deadline by the timeout's shared timer, with no timer of its own")
    func bodyReadOnSharedTimer() async throws {
        let transport = EnforcingTransport(clock: clock, behavior: .bodyUntilCancelled)
        let timer = DeadlineTimer(clock: clock)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.timeout(.seconds(3), timer: timer)]
        )
        let call = Task { try await client.send(RetryFixtures.request()) }
        await transport.bodyReadStarted.wait()
        #expect(transport.bodyReadsAttached.value == [true])
        // The timer's driver is the one sleeper: the body read started no timer.
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleeperCount == 1)
        #expect(timer.pendingCount == 1)
        clock.advance(by: .seconds(3))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(3))
        #expect(error.middleware == "timeout")
        #expect(timer.pendingCount == 0)
    }

    @Test("an inner timeout under a nearer outer deadline reports the outer timeout")
    func outerNearer() async throws {
        let transport = EnforcingTransport(clock: clock, behavior: .holdUntilDeadline)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.timeout(.seconds(1), clock: clock), .timeout(.seconds(5), clock: clock)]
        )
        let call = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(transport.seen.value.first?.timeout == .seconds(1))
        clock.advance(by: .seconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(1))
    }

    @Test("a failure before the deadline passes through as it is")
    func failureBeforeDeadline() async throws {
        let transport = EnforcingTransport(clock: clock, behavior: .fail)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.timeout(.seconds(3), clock: clock)]
        )
        let error = try await #require(throws: CourierError.self) { try await client.send(RetryFixtures.request()) }
        #expect(error.code == .transport)
        #expect(clock.now.offset == .zero)
    }

    @Test("a cancelled caller gets CancellationError, not a timeout")
    func cancelled() async throws {
        let transport = EnforcingTransport(clock: clock, behavior: .holdUntilDeadline)
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.timeout(.seconds(3), clock: clock)]
        )
        let call = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.join() }
    }
}

#if AsyncHTTPClient
import AsyncHTTPClient

@Suite("AsyncHTTPClientTransport enforces deadlines")
struct AsyncHTTPClientDeadlineTests {
    @Test("a deadline in real time is the transport's to enforce; one on a manual clock stays the timeout's")
    func realTimeOnly() {
        let transport = AsyncHTTPClientTransport(client: HTTPClient.shared)
        #expect(transport.enforces(Deadline(after: .seconds(1))))
        #expect(transport.enforces(Deadline(after: .seconds(1), clock: SuspendingClock())))
        #expect(!transport.enforces(Deadline(after: .seconds(1), clock: ManualClock())))
    }
}
#endif
