import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("RequestCounter and .counting", .timeLimit(.minutes(2)))
struct RequestCounterTests {
    private let counter = RequestCounter()
    /// Holds the requests sent with `heldClient` until a test opens it.
    private let gate = Gate()
    /// Counts the requests that reach `heldClient`'s transport.
    private let arrived = Arrivals()

    /// A client that counts in `counter`, over a transport that holds every request until `gate` opens.
    private var heldClient: Client {
        Client(transport: MockTransport.held(by: gate, counting: arrived), middleware: [.counting(counter)])
    }

    private struct Boom: Error {}

    private static func request(_ path: String) -> URLRequest {
        URLRequest(url: exampleBaseURL.appendingPathComponent(path))
    }

    @Test("a success, an error and a cancellation are each counted once", .timeLimit(.minutes(1)))
    func basicOutcomes() async throws {
        let transport = MockTransport { request in
            switch request.url?.lastPathComponent {
            case "error": throw Boom()
            case "hang": try await waitForCancellation()
            default: break
            }
            return .ok
        }
        let client = Client(transport: transport, middleware: [.counting(counter)])

        _ = try await client.send(Self.request("ok"))
        await #expect(throws: CourierError.self) { try await client.send(Self.request("error")) }
        let hanging = Task { try await client.send(Self.request("hang")) }
        try await waitUntil { counter.snapshot.inFlight == 1 }
        hanging.cancel()
        await #expect(throws: CancellationError.self) { try await hanging.join() }

        #expect(
            counter.snapshot
                == RequestCounter.Snapshot(inFlight: 0, peak: 1, started: 3, succeeded: 1, failed: 1, cancelled: 1)
        )
    }

    @Test("a retry inside the counting middleware is still one request")
    func retryInsideIsOneRequest() async throws {
        let transport = MockTransport(.failure(Boom()), then: .ok)
        let retryOnce = Middleware { request, next in
            do { return try await next(request) } catch { return try await next(request) }
        }
        let client = Client(transport: transport, middleware: [.counting(counter), retryOnce])
        _ = try await client.send(Self.request("x"))
        #expect(transport.callCount == 2)
        #expect(counter.snapshot == RequestCounter.Snapshot(inFlight: 0, peak: 1, started: 1, succeeded: 1))
    }

    @Test("waitUntilIdle returns at once when nothing is in flight", .timeLimit(.minutes(1)))
    func idleAtOnce() async {
        await counter.waitUntilIdle()
        #expect(counter.snapshot.inFlight == 0)
        #expect(counter.idleWaiterCount == 0)
    }

    @Test("many waiters all resume when the last request in flight ends", .timeLimit(.minutes(1)))
    func manyWaiters() async throws {
        let client = heldClient
        let requests = (0..<3).map { _ in Task { try await client.send(Self.request("x")) } }
        await arrived.wait(for: 3)

        let seenOnReturn = Locked<[RequestCounter.Snapshot]>([])
        let waiters = (0..<5).map { _ in
            Task {
                await counter.waitUntilIdle()
                seenOnReturn.withLock { $0.append(counter.snapshot) }
            }
        }
        try await waitUntil { counter.idleWaiterCount == 5 }
        #expect(seenOnReturn.value.isEmpty)

        gate.open()
        for request in requests { _ = try await request.join() }
        for waiter in waiters { await waiter.join() }
        #expect(seenOnReturn.value.count == 5)
        #expect(seenOnReturn.value.allSatisfy { $0.inFlight == 0 && $0.succeeded == 3 })
    }

    @Test("a cancelled waiter stops waiting while requests are still in flight", .timeLimit(.minutes(1)))
    func cancelledWaiter() async throws {
        let client = heldClient
        let request = Task { try await client.send(Self.request("x")) }
        try await waitUntil { counter.snapshot.inFlight == 1 }
        let waiter = Task { await counter.waitUntilIdle() }
        try await waitUntil { counter.idleWaiterCount == 1 }
        waiter.cancel()
        await waiter.join()
        #expect(counter.snapshot.inFlight == 1)
        #expect(counter.idleWaiterCount == 0)
        gate.open()
        _ = try await request.join()
    }

    @Test("the change stream starts with the counts now and delivers every change in order", .timeLimit(.minutes(1)))
    func changeStream() async throws {
        let client = Client(transport: MockTransport(.ok, then: .failure(Boom())))
        await client.update { $0.middleware.append(.counting(counter)) }
        _ = try await client.send(Self.request("x"))

        var changes = counter.changes().makeAsyncIterator()
        _ = try? await client.send(Self.request("y"))

        var seen: [RequestCounter.Change] = []
        for _ in 0..<3 {
            if let change = await changes.next() { seen.append(change) }
        }
        #expect(seen.map(\.event) == [.subscribed, .started, .failed])
        #expect(seen.map(\.snapshot.inFlight) == [0, 1, 0])
        #expect(seen.map(\.snapshot.started) == [1, 2, 2])
        #expect(seen.last?.snapshot == RequestCounter.Snapshot(peak: 1, started: 2, succeeded: 1, failed: 1))
    }

    @Test("a stream whose consumer goes away is forgotten", .timeLimit(.minutes(1)))
    func streamTermination() async throws {
        let subscribed = Gate()
        let consumer = Task {
            for await _ in counter.changes() { subscribed.open() }
        }
        await subscribed.wait()
        #expect(counter.subscriberCount == 1)
        consumer.cancel()
        await consumer.join()
        try await waitUntil { counter.subscriberCount == 0 }
        #expect(counter.subscriberCount == 0)
    }

    @Test("10,000 mixed outcomes: never negative, every start ends once, back to 0")
    func tenThousandMixedOutcomes() async throws {
        let perKind = 2_000
        let inTransport = Arrivals()
        let deadline = Gate()
        let start = Gate()

        let transport = MockTransport { request in
            switch request.url?.lastPathComponent {
            case "error":
                throw Boom()
            case "hang", "timeout":
                inTransport.arrive()
                try await waitForCancellation()
            default:
                break
            }
            return .ok
        }
        // Stands in for a timeout middleware: races the attempt against a deadline the test controls.
        let testTimeout = Middleware(name: "test-timeout") { request, next in
            guard request.url?.lastPathComponent == "timeout" else { return try await next(request) }
            return try await withThrowingTaskGroup(of: (Data, HTTPURLResponse)?.self) { group in
                group.addTask { try await next(request) }
                group.addTask {
                    await deadline.wait()
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                guard let first else { throw CourierError(.timedOut, message: "the test deadline passed") }
                return first
            }
        }
        let client = Client(transport: transport, middleware: [.counting(counter), testTimeout])

        // Watch every change: inFlight must never go negative, and the counts must always add up.
        let stream = counter.changes()
        let watcher = Task {
            var starts = 0
            var ends = 0
            var violations: [RequestCounter.Change] = []
            for await change in stream {
                let counts = change.snapshot
                switch change.event {
                case .started: starts += 1
                case .succeeded, .failed, .cancelled: ends += 1
                case .subscribed: break
                }
                if counts.inFlight < 0 || counts.started != counts.finished + counts.inFlight
                    || counts.peak < counts.inFlight
                {
                    violations.append(change)
                }
                if counts.finished == 5 * perKind { break }
            }
            return (starts, ends, violations)
        }

        let results = Locked<[String: Int]>([:])
        @Sendable func record(_ result: Result<(Data, HTTPURLResponse), any Error>) {
            let key: String
            switch result {
            case .success: key = "success"
            case .failure(let error as CourierError): key = error.code.description
            case .failure(is CancellationError): key = "cancelled"
            case .failure: key = "other"
            }
            results.withLock { $0[key, default: 0] += 1 }
        }

        var tasks: [Task<Void, Never>] = []
        var cancelledLater: [Task<Void, Never>] = []
        for index in 0..<(5 * perKind) {
            switch index % 5 {
            case 0:
                tasks.append(Task { record(await Result { try await client.send(Self.request("ok")) }) })
            case 1:
                tasks.append(Task { record(await Result { try await client.send(Self.request("error")) }) })
            case 2:
                tasks.append(Task { record(await Result { try await client.send(Self.request("timeout")) }) })
            case 3:
                // Cancelled before it reaches the transport: the task is cancelled before it starts sending.
                let task = Task {
                    await start.wait()
                    record(await Result { try await client.send(Self.request("ok")) })
                }
                task.cancel()
                tasks.append(task)
            default:
                // Cancelled while the transport is working on it.
                let task = Task { record(await Result { try await client.send(Self.request("hang")) }) }
                cancelledLater.append(task)
            }
        }
        start.open()
        await inTransport.wait(for: 2 * perKind)  // every "hang" and "timeout" request is in the transport
        #expect(counter.snapshot.inFlight >= 2 * perKind)
        for task in cancelledLater { task.cancel() }
        deadline.open()
        for task in tasks + cancelledLater { await task.join() }
        await counter.waitUntilIdle()

        let (starts, ends, violations) = await watcher.join()
        let final = counter.snapshot
        #expect(violations.count == 0, "first violation: \(violations.first.map { String(describing: $0) } ?? "none")")
        #expect(starts == 5 * perKind)
        #expect(ends == starts)
        #expect(final.inFlight == 0)
        #expect(final.started == 5 * perKind)
        #expect(final.succeeded == perKind)
        #expect(final.failed == 2 * perKind)
        #expect(final.cancelled == 2 * perKind)
        #expect(final.peak >= 2 * perKind)
        #expect(
            results.value == ["success": perKind, "transport": perKind, "timedOut": perKind, "cancelled": 2 * perKind]
        )
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
