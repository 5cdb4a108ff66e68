import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The identity of the task that calls it.
private func currentTaskID() -> Int? {
    withUnsafeCurrentTask { $0?.hashValue }
}

/// Records the task that starts each data task of `URLSessionTransport` with its own delegate (the transport's
/// debug seam, called before the start moves to its queue), by the request's `X-Probe` field.
private enum DataTaskProbe {
    static let seen = Locked<[String: [Int?]]>([:])

    /// A transport with its own session, whose data tasks the probe sees.
    static func transport() -> URLSessionTransport {
        URLSessionTaskQueue.startObserver.withLock { observer in
            if observer == nil {
                observer = { request in
                    guard let key = request.value(forHTTPHeaderField: "X-Probe") else { return }
                    let task = currentTaskID()
                    seen.withLock { $0[key, default: []].append(task) }
                }
            }
        }
        return URLSessionTransport()
    }
}

/// The transports that end a call by its deadline themselves (`DeadlineEnforcingTransport`), against a loopback
/// `SocketServer` that stalls: `URLSessionTransport` with its own session, and `AsyncHTTPClientTransport` with the
/// trait. Deadlines are real (a transport enforces only real-time ones) and short; nothing sleeps to synchronize.
///
/// Each test waits for the server to see the connection of every request it received closed. On a loaded machine
/// URLSession may not have sent a request by a short deadline; cancelled before it starts, it never reaches the
/// server, so the tests do not count on it.
@Suite("Transports that enforce deadlines", .timeLimit(.minutes(1)))
struct TransportDeadlineTests {
    /// How a GET of `url` straight through a new transport of `kind` ends under `deadline`, set by hand.
    private static func send(
        _ url: URL,
        over kind: TransportKind,
        under deadline: Deadline
    ) async throws -> Result<(Data, HTTPURLResponse), any Error> {
        try await kind.withTransport { transport in
            await outcome {
                try await Deadline.$current.withValue(deadline) { try await transport.send(URLRequest(url: url)) }
            }
        }
    }

    @Test(
        "under a timeout, a response that stalls (head or body) is cut at the deadline and its connection closed",
        arguments: TransportKind.enforcingDeadlines,
        [false, true]
    )
    func timeoutCutsStall(kind: TransportKind, headArrives: Bool) async throws {
        let server = try SocketServer { _ in headArrives ? .drip : .hang }
        defer { server.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await kind.withTransport { transport in
            let client = Client(transport: transport, middleware: [.timeout(.milliseconds(300))])
            return await outcome { try await client.send(URLRequest(url: server.url("/stall"))) }
        }
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(300))
        #expect(error.middleware == "timeout")
        #expect(clock.now - start >= .milliseconds(300))
        await server.closedByClient.wait(for: server.requests.count)
        // The timer ended the exchange, not the caller's task (see `callerTaskUsableAfterTimeout`).
        #expect(!Task.isCancelled)
    }

    @Test(
        "under a timeout, the chain runs in the caller's own task and the transport gets the timer's work",
        arguments: TransportKind.enforcingDeadlines
    )
    func noChildTask(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.shutdown() }
        let seen = Locked<[(task: Int?, hasWork: Bool)]>([])
        // A layer that says it waits only within the deadline, so that the timeout may leave it to the transport.
        let probe = Middleware(name: "probe", waitsOnlyWithinDeadline: true) { request, next in
            seen.withLock { $0.append((currentTaskID(), Deadline.current?.work?.owner != nil)) }
            return try await next(request)
        }
        let (data, response) = try await kind.withTransport { transport in
            let client = Client(transport: transport, middleware: [.timeout(.seconds(30)), probe])
            return try await client.send(URLRequest(url: server.url("/ok")))
        }
        #expect(response.statusCode == 200)
        #expect(data == Data("ok".utf8))
        let probed = try #require(seen.withLock { $0.first })
        #expect(probed.task == currentTaskID())
        #expect(probed.hasWork)
    }

    @Test("under a timeout that runs the chain in a child task, URLSessionTransport leaves the deadline to it")
    func noSecondTimerUnderChildTask() async throws {
        let server = try SocketServer { _ in .response(status: 200, body: Data("ok".utf8)) }
        defer { server.shutdown() }
        let key = UUID().uuidString
        let layerTask = Locked<Int?>(nil)
        // A middleware of the caller's: the timeout runs the chain in a child task it cancels at the deadline.
        let mine = Middleware { request, next in
            layerTask.withLock { $0 = currentTaskID() }
            var request = request
            request.setValue(key, forHTTPHeaderField: "X-Probe")
            return try await next(request)
        }
        let client = Client(transport: DataTaskProbe.transport(), middleware: [.timeout(.seconds(30)), mine])
        let (data, _) = try await client.send(URLRequest(url: server.url("/ok")))
        #expect(data == Data("ok".utf8))
        // The data task is made in the layer's own task: the transport did not race a timer of its own (a child
        // task and a sleeping one per call, on top of the timeout's).
        let probed = try #require(DataTaskProbe.seen.withLock { $0[key]?.first })
        #expect(probed == layerTask.withLock { $0 })
    }

    @Test("a timed-out call leaves the caller's task able to call again", arguments: TransportKind.enforcingDeadlines)
    func callerTaskUsableAfterTimeout(kind: TransportKind) async throws {
        let server = try SocketServer { request in
            request.path == "/stall" ? .drip : .response(status: 200, body: Data("ok".utf8))
        }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let timing = Client(transport: transport, middleware: [.timeout(.milliseconds(200))])
            await #expect(throws: CourierError.self) { try await timing.send(URLRequest(url: server.url("/stall"))) }
            #expect(!Task.isCancelled)
            // No deadline of its own: a loaded machine may take longer than 200 ms to answer.
            let (data, _) = try await Client(transport: transport).send(URLRequest(url: server.url("/ok")))
            #expect(data == Data("ok".utf8))
        }
    }

    @Test(
        "under a timeout, a cancelled caller gets CancellationError and the connection is closed",
        arguments: TransportKind.enforcingDeadlines
    )
    func callerCancelled(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .drip }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let client = Client(transport: transport, middleware: [.timeout(.seconds(30))])
            let call = Task { try await client.send(URLRequest(url: server.url("/stall"))) }
            try await waitUntil { server.requests.count == 1 }
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.join() }
        }
        await server.closedByClient.wait(for: 1)
    }

    @Test("a deadline set by hand bounds a stalled response", arguments: TransportKind.enforcingDeadlines)
    func handSetDeadline(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .drip }
        defer { server.shutdown() }
        let result = try await Self.send(server.url("/stall"), over: kind, under: Deadline(after: .milliseconds(300)))
        let error = try #require(result.failure as? CourierError, "\(result)")
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(300))
        await server.closedByClient.wait(for: server.requests.count)
    }

    @Test("a deadline that has passed fails the request before it is sent", arguments: TransportKind.enforcingDeadlines)
    func passedDeadline(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .response(status: 200) }
        defer { server.shutdown() }
        let result = try await Self.send(server.url("/late"), over: kind, under: Deadline(after: .zero))
        #expect((result.failure as? CourierError)?.code == .timedOut, "\(result)")
        #expect(server.requests.isEmpty)
    }

    @Test(
        "two attempts at once under one timeout's deadline are both cut: the second races a timer of its own",
        arguments: TransportKind.enforcingDeadlines
    )
    func twoAttemptsAtOnce(kind: TransportKind) async throws {
        let server = try SocketServer { _ in .drip }
        defer { server.shutdown() }
        let both = Middleware(name: "both", waitsOnlyWithinDeadline: true) { request, next in
            async let first = outcome { try await next(request) }
            async let second = outcome { try await next(request) }
            let results = await [first, second]
            for result in results {
                let error = try #require(result.failure as? CourierError, "\(result)")
                #expect(error.code == .timedOut)
            }
            throw try #require(results[0].failure)
        }
        let result = try await kind.withTransport { transport in
            let client = Client(transport: transport, middleware: [.timeout(.milliseconds(300)), both])
            return await outcome { try await client.send(URLRequest(url: server.url("/stall"))) }
        }
        #expect((result.failure as? CourierError)?.code == .timedOut, "\(result)")
        await server.closedByClient.wait(for: server.requests.count)
    }
}
