import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let baseURL = exampleBaseURL

/// Alive while a request value that holds it is alive; counts the live ones as requests in flight.
private final class LiveToken: Sendable {
    let counter: RequestCounter

    init(_ counter: RequestCounter) {
        self.counter = counter
        counter.recordStart()
    }

    deinit { counter.recordEnd(.succeeded) }
}

/// Answers every request with `200` and its path as the body. Unlike `MockTransport` it records nothing,
/// so 100,000 calls keep no requests alive.
private struct EchoTransport: Transport {
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        await Task.yield()
        return try await MockResponse.status(200, body: request.url!.path).httpResponse(for: request)
    }
}

/// Requests `/e/0`, `/e/1`, … for as long as they are read, counting the reads.
///
/// It is a `Sequence` and not a `Collection`, like any lazily generated input. Should a fan-out keep reading
/// it, it stops after `cap` elements (far more than any test starts) so that the test fails on its count
/// instead of running forever.
private struct EndlessRequests: Sequence {
    let reads: Locked<Int>
    var cap = 200_000

    func makeIterator() -> AnyIterator<Request<EmptyResponse>> {
        AnyIterator {
            let read = reads.withLock { reads in
                reads += 1
                return reads
            }
            return read <= cap ? Request<EmptyResponse>.get("/e/\(read - 1)") : nil
        }
    }
}

/// Runs its jobs on a dispatch queue it can recognize, so a test can ask "am I on this actor?" without
/// crashing when the answer is no.
private final class RecognizableExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "courier.tests.caller-actor")
    private let key = DispatchSpecificKey<Int>()

    init() {
        queue.setSpecific(key: key, value: 1)
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == 1 }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

private actor CallerActor {
    private let executor = RecognizableExecutor()
    private var offActor = 0
    private var handled = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Fans out (with `sendEach`, then `sendAllOrThrow`) with a lazy sequence and a handler that both touch
    /// this actor's state.
    func fanOut(with client: Client, count: Int) async -> (handled: Int, offActor: Int) {
        let requests = (0..<count).lazy.map { index in
            if !self.executor.isCurrent { self.offActor += 1 }
            return Request<String>.get("/i/\(index)")
        }
        await client.sendEach(requests, maxConcurrency: 8) { _, _ in
            if !self.executor.isCurrent { self.offActor += 1 }
            self.handled += 1
        }
        let outputs = try? await client.sendAllOrThrow(requests, maxConcurrency: 8)
        handled += outputs?.count ?? 0
        return (handled, offActor)
    }
}

@Suite("Client.sendAll and friends")
struct ClientSendAllTests {
    /// Counts the requests that reach ``hanging``.
    private let arrived = Arrivals()
    /// A transport that hangs until cancelled, counting each request in ``arrived``.
    private let hanging: MockTransport
    /// Counts the requests a test's batch read from its sequence or collection.
    private let reads = Locked(0)

    /// Whether every result is a `CancellationError`.
    private func allCancelled<Success>(_ results: [Result<Success, any Error>]) -> Bool {
        results.allSatisfy { if case .failure(is CancellationError) = $0 { true } else { false } }
    }

    init() {
        hanging = .hanging(counting: arrived)
    }

    /// Starts `batch` with a client over ``hanging``, and cancels it once `inFlight` requests have reached the
    /// transport.
    private func cancelWhenInFlight<T: Sendable>(
        _ inFlight: Int,
        _ batch: sending @escaping (Client) async throws -> T
    ) async -> Task<T, any Error> {
        let client = Client(baseURL: baseURL, transport: hanging)
        let task = Task { try await batch(client) }
        await arrived.wait(for: inFlight)
        task.cancel()
        return task
    }

    @Test(
        "sendAll never has more than maxConcurrency requests in flight, and uses all of them",
        .timeLimit(.minutes(1))
    )
    func neverExceedsLimit() async throws {
        let holding = HoldingTransport()
        let client = Client(baseURL: baseURL, transport: holding)
        let requests = (0..<40).map { Request<EmptyResponse>.get("/items/\($0)") }
        let batch = Task { await client.sendAll(requests, maxConcurrency: 5) }

        await holding.waitUntilHolding(5)
        // Five are held in the transport and none has finished, so no sixth may have started.
        #expect(holding.requests.count == 5)
        // Each round, the five answered make room for exactly five more.
        await answerInRounds(holding, total: 40, limit: 5)
        let results = await batch.join()

        #expect(results.count == 40)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(holding.requests.count == 40)
        #expect(holding.peakHeldCount == 5)
    }

    @Test("sendAll returns results in input order, whatever order the responses come back in", .timeLimit(.minutes(1)))
    func keepsInputOrder() async throws {
        let count = 10
        let gates = (0..<count).map { _ in Gate() }
        let arrived = Arrivals()
        let finished = Arrivals()
        let completionOrder = Locked<[Int]>([])
        let transport = MockTransport { request in
            let index = Int(request.url!.lastPathComponent)!
            arrived.arrive()
            await gates[index].wait()
            completionOrder.withLock { $0.append(index) }
            finished.arrive()
            return .status(200, body: "item \(index)")
        }
        let client = Client(baseURL: baseURL, transport: transport)
        let batch = Task {
            await client.sendAll((0..<count).map { Request<String>.get("/items/\($0)") }, maxConcurrency: count)
        }

        await arrived.wait(for: count)
        for (released, index) in (0..<count).reversed().enumerated() {
            gates[index].open()
            await finished.wait(for: released + 1)
        }
        let results = await batch.join()

        #expect(completionOrder.value == Array((0..<count).reversed()))
        #expect(try results.map { try $0.get() } == (0..<count).map { "item \($0)" })
    }

    @Test("a failed request gets its own failure and the others still succeed")
    func perItemFailures() async throws {
        let transport = MockTransport { request in
            let index = Int(request.url!.lastPathComponent)!
            return index.isMultiple(of: 3) ? .status(503) : .status(200, body: "\(index)")
        }
        let client = Client(baseURL: baseURL, transport: transport)
        let results = await client.sendAll((0..<12).map { Request<String>.get("/n/\($0)") }, maxConcurrency: 4)

        #expect(results.count == 12)
        for (index, result) in results.enumerated() {
            if index.isMultiple(of: 3) {
                #expect(throws: CourierError.self) { try result.get() }
                if case .failure(let error as CourierError) = result {
                    #expect(error.code == .unacceptableStatus)
                    #expect(error.statusCode == 503)
                }
            } else {
                #expect(try result.get() == "\(index)")
            }
        }
    }

    @Test("cancelling the caller cancels every request in flight and starts no other", .timeLimit(.minutes(1)))
    func cancellationReachesEveryChild() async throws {
        let results = try await cancelWhenInFlight(4) { client in
            await client.sendAll((0..<20).map { Request<EmptyResponse>.get("/slow/\($0)") }, maxConcurrency: 4)
        }.value

        #expect(results.count == 20)
        for result in results {
            #expect(throws: CancellationError.self) { try result.get() }
        }
        #expect(hanging.callCount == 4)
        #expect(hanging.cancellationCount == 4)
    }

    @Test("sendAll works for URLRequests and returns each raw response in order")
    func rawRequests() async throws {
        let transport = MockTransport { request in
            .status(Int(request.url!.lastPathComponent)!, body: request.url!.path)
        }
        let client = Client(transport: transport)
        let statuses = [200, 404, 201, 500, 204]
        let requests = statuses.map { URLRequest(url: baseURL.appendingPathComponent("status/\($0)")) }

        let results = await client.sendAll(requests, maxConcurrency: 2)

        let responses = try results.map { try $0.get() }
        #expect(responses.map(\.1.statusCode) == statuses)
        #expect(responses.map { String(decoding: $0.0, as: UTF8.self) } == statuses.map { "/status/\($0)" })
    }

    @Test("sendAllOrThrow returns every response in input order")
    func allOrThrowSucceeds() async throws {
        let client = Client(baseURL: baseURL, transport: EchoTransport())

        let typed = try await client.sendAllOrThrow((0..<50).map { Request<String>.get("/t/\($0)") }, maxConcurrency: 7)
        let raw = try await client.sendAllOrThrow(
            (0..<5).map { URLRequest(url: baseURL.appendingPathComponent("r/\($0)")) },
            maxConcurrency: 2
        )

        #expect(typed == (0..<50).map { "/t/\($0)" })
        #expect(raw.map { String(decoding: $0.0, as: UTF8.self) } == (0..<5).map { "/r/\($0)" })
    }

    @Test(
        "sendAllOrThrow throws the first error, cancels the requests in flight and starts no more",
        .timeLimit(.minutes(1))
    )
    func allOrThrowFailsFast() async throws {
        let arrived = Arrivals()
        let transport = MockTransport { request in
            arrived.arrive()
            if request.url!.lastPathComponent == "2" {
                await arrived.wait(for: 3)
                throw URLError(.networkConnectionLost)
            }
            try await waitForCancellation()
            return .ok
        }
        let client = Client(baseURL: baseURL, transport: transport)
        let requests = (0..<10).map { URLRequest(url: baseURL.appendingPathComponent("n/\($0)")) }

        let error = await #expect(throws: CourierError.self) {
            try await client.sendAllOrThrow(requests, maxConcurrency: 3)
        }

        #expect(error?.code == .transport)
        #expect((error?.underlying as? URLError)?.code == .networkConnectionLost)
        #expect(transport.callCount == 3)
        #expect(transport.cancellationCount == 2)
    }

    @Test("sendAllOrThrow reports the caller's cancellation as CancellationError", .timeLimit(.minutes(1)))
    func allOrThrowCancelled() async throws {
        let batch = await cancelWhenInFlight(2) { client in
            try await client.sendAllOrThrow((0..<8).map { Request<EmptyResponse>.get("/x/\($0)") }, maxConcurrency: 2)
        }

        await #expect(throws: CancellationError.self) { try await batch.join() }
        #expect(hanging.callCount == 2)
    }

    /// A transport that counts each request's arrival and answers `200` once the gate opens, cancelled or not.
    private static func gatedTransport() -> (Arrivals, Gate, MockTransport) {
        let arrivals = Arrivals()
        let gate = Gate()
        let transport = MockTransport { _ in
            arrivals.arrive()
            await gate.wait()
            return .ok
        }
        return (arrivals, gate, transport)
    }

    @Test(
        "sendAllOrThrow cancelled while its requests still succeed throws CancellationError, never a short array",
        .timeLimit(.minutes(1))
    )
    func allOrThrowCancelledWhileSucceeding() async throws {
        // Ignores cancellation: the two requests in flight end with 200 after the caller is cancelled.
        let (arrivals, gate, transport) = Self.gatedTransport()
        let client = Client(baseURL: baseURL, transport: transport)
        let batch = Task {
            try await client.sendAllOrThrow((0..<8).map { Request<EmptyResponse>.get("/x/\($0)") }, maxConcurrency: 2)
        }
        await arrivals.wait(for: 2)
        batch.cancel()
        gate.open()

        await #expect(throws: CancellationError.self) { try await batch.join() }
        #expect(transport.callCount == 2)
    }

    @Test(
        "sendAllOrThrow cancelled once every request was sent returns them all, whatever maxConcurrency",
        .timeLimit(.minutes(1)),
        arguments: [3, 4]
    )
    func allOrThrowCancelledAfterEverySend(maxConcurrency: Int) async throws {
        let (arrivals, gate, transport) = Self.gatedTransport()
        let client = Client(baseURL: baseURL, transport: transport)
        let batch = Task {
            try await client.sendAllOrThrow(
                (0..<3).map { Request<EmptyResponse>.get("/x/\($0)") },
                maxConcurrency: maxConcurrency
            )
        }
        await arrivals.wait(for: 3)
        batch.cancel()
        gate.open()

        #expect(try await batch.join().count == 3)
    }

    @Test("sendAllOrThrow of an empty collection from a cancelled task returns no responses", .timeLimit(.minutes(1)))
    func allOrThrowEmptyCancelled() async throws {
        let client = Client(baseURL: baseURL, transport: MockTransport(.ok))
        let gate = Gate()
        let batch = Task {
            await gate.wait()
            return try await client.sendAllOrThrow([Request<EmptyResponse>](), maxConcurrency: 2)
        }
        batch.cancel()
        gate.open()

        #expect(try await batch.join().isEmpty)
    }

    @Test(
        "sendAllOrThrow called from a cancelled task throws CancellationError and sends nothing",
        .timeLimit(.minutes(1))
    )
    func allOrThrowAlreadyCancelled() async throws {
        let transport = MockTransport(.ok)
        let client = Client(baseURL: baseURL, transport: transport)
        let gate = Gate()
        let batch = Task {
            await gate.wait()
            return try await client.sendAllOrThrow(
                (0..<3).map { Request<EmptyResponse>.get("/x/\($0)") },
                maxConcurrency: 2
            )
        }
        batch.cancel()
        gate.open()

        await #expect(throws: CancellationError.self) { try await batch.join() }
        #expect(transport.callCount == 0)
    }

    @Test("sendEach hands over every result exactly once, as it arrives")
    func sendEachDeliversAll() async throws {
        let client = Client(baseURL: baseURL, transport: EchoTransport())
        var seen: [Int: String] = [:]

        await client.sendEach((0..<200).lazy.map { Request<String>.get("/e/\($0)") }, maxConcurrency: 8) {
            index,
            result in
            #expect(seen[index] == nil)
            seen[index] = try? result.get()
        }

        #expect(seen.count == 200)
        #expect(seen.allSatisfy { $0.value == "/e/\($0.key)" })
    }

    @Test(
        "when sendEach's handler throws, the requests in flight are cancelled and the error rethrown",
        .timeLimit(.minutes(1))
    )
    func sendEachHandlerThrows() async throws {
        struct Stop: Error {}
        let arrived = Arrivals()
        let transport = MockTransport { request in
            arrived.arrive()
            if request.url!.lastPathComponent == "0" {
                await arrived.wait(for: 4)
                return .ok
            }
            try await waitForCancellation()
            return .ok
        }
        let client = Client(baseURL: baseURL, transport: transport)
        var handled: [Int] = []

        await #expect(throws: Stop.self) {
            try await client.sendEach((0..<100).map { Request<EmptyResponse>.get("/h/\($0)") }, maxConcurrency: 4) {
                index,
                _ in
                handled.append(index)
                throw Stop()
            }
        }

        #expect(handled == [0])
        #expect(transport.callCount == 4)
        #expect(transport.cancellationCount == 3)
    }

    @Test("called on an actor, the input sequence and the handler run on that actor")
    func runsOnTheCallersIsolation() async throws {
        let client = Client(baseURL: baseURL, transport: EchoTransport())
        let caller = CallerActor()

        let (handled, offActor) = await caller.fanOut(with: client, count: 50)

        #expect(handled == 100)
        #expect(offActor == 0)
    }

    @Test(
        "100,000 requests at 64 concurrent never hold more than 64 live children or requests in flight",
        .timeLimit(.minutes(3))
    )
    func memoryStaysFlat() async throws {
        let inFlight = RequestCounter()
        let liveRequests = RequestCounter()
        let client = Client(baseURL: baseURL, transport: EchoTransport(), middleware: [.counting(inFlight)])
        let total = 100_000
        // Each request is made on demand and carries a token in its decoding closure: a child task keeps its
        // request (and so the token) alive, so the live tokens bound the live children from below.
        let requests = (0..<total).lazy.map { index in
            let token = LiveToken(liveRequests)
            return Request<Int>(method: .get, target: .path("/m/\(index)")) { _, _, _ in
                withExtendedLifetime(token) { index }
            }
        }

        let results = await client.sendAll(requests, maxConcurrency: 64)

        #expect(results.count == total)
        #expect(try results.enumerated().allSatisfy { try $0.element.get() == $0.offset })
        #expect(liveRequests.snapshot.started == total)
        #expect(liveRequests.snapshot.peak <= 64)
        #expect(liveRequests.snapshot.inFlight == 0)
        #expect(inFlight.snapshot.peak <= 64)
        #expect(inFlight.snapshot.started == total)
    }

    // MARK: Cancellation stops the reading of the input

    @Test(
        "cancelled, sendEach over an endless input hands over the requests in flight and returns, reading no more",
        .timeLimit(.minutes(1))
    )
    func sendEachEndlessCancelled() async throws {
        let handled = Locked<[Int]>([])
        let cancellations = Locked(0)
        try await cancelWhenInFlight(4) { client in
            await client.sendEach(EndlessRequests(reads: reads), maxConcurrency: 4) { index, result in
                handled.withLock { $0.append(index) }
                if case .failure(is CancellationError) = result { cancellations.withLock { $0 += 1 } }
            }
        }.value

        #expect(reads.value == 4)
        #expect(handled.value.sorted() == [0, 1, 2, 3])
        #expect(cancellations.value == 4)
        #expect(hanging.callCount == 4)
        #expect(hanging.cancellationCount == 4)
    }

    @Test("sendEach called from a cancelled task reads nothing and calls nothing", .timeLimit(.minutes(1)))
    func sendEachAlreadyCancelled() async throws {
        let transport = MockTransport(.ok)
        let client = Client(baseURL: baseURL, transport: transport)
        let gate = Gate()
        let batch = Task {
            await gate.wait()
            var calls = 0
            await client.sendEach(EndlessRequests(reads: reads), maxConcurrency: 4) { _, _ in calls += 1 }
            return calls
        }
        batch.cancel()
        gate.open()

        #expect(await batch.join() == 0)
        #expect(reads.value == 0)
        #expect(transport.callCount == 0)
    }

    @Test(
        "cancelled, sendAll of a lazily mapped collection returns one result per element without reading the rest",
        .timeLimit(.minutes(1))
    )
    func sendAllCollectionCancelled() async throws {
        // A `LazyMapCollection`: its count is known without calling the closure.
        let requests = (0..<1_000).lazy.map { index in
            reads.withLock { $0 += 1 }
            return Request<EmptyResponse>.get("/c/\(index)")
        }
        let results = try await cancelWhenInFlight(4) { client in await client.sendAll(requests, maxConcurrency: 4) }
            .value

        #expect(results.count == 1_000)
        #expect(allCancelled(results))
        #expect(reads.value == 4)
        #expect(hanging.callCount == 4)
    }

    @Test(
        "cancelled, sendAll of an endless sequence returns the results of the requests it read",
        .timeLimit(.minutes(1))
    )
    func sendAllEndlessCancelled() async throws {
        let results = try await cancelWhenInFlight(4) { client in
            await client.sendAll(EndlessRequests(reads: reads), maxConcurrency: 4)
        }.value

        #expect(results.count == 4)
        #expect(allCancelled(results))
        #expect(reads.value == 4)
        #expect(hanging.cancellationCount == 4)
    }

    @Test(
        "cancelled, sendAllOrThrow over an endless sequence throws CancellationError, reading no more",
        .timeLimit(.minutes(1))
    )
    func sendAllOrThrowEndlessCancelled() async throws {
        let batch = await cancelWhenInFlight(4) { client in
            try await client.sendAllOrThrow(EndlessRequests(reads: reads), maxConcurrency: 4)
        }

        await #expect(throws: CancellationError.self) { try await batch.join() }
        #expect(reads.value == 4)
        #expect(hanging.cancellationCount == 4)
    }

    /// A cancelled batch, for each kind of input, size and limit: some requests have answered, some are in
    /// flight, and the caller is cancelled.
    struct CancelledBatch: Sendable, CustomTestStringConvertible {
        let count: Int
        let maxConcurrency: Int
        let answered: Int
        let isCollection: Bool

        var testDescription: String {
            "\(isCollection ? "collection" : "sequence") of \(count), \(maxConcurrency) at a time, \(answered) answered"
        }

        /// Every combination of sizes around the limit, answered counts and input kinds.
        static var all: [CancelledBatch] {
            var batches: [CancelledBatch] = []
            for count in [0, 1, 3, 8, 20] {
                for maxConcurrency in [1, 3, 8] {
                    for answered in Set([0, 1, count / 2, count]) where answered <= count {
                        for isCollection in [true, false] {
                            batches.append(
                                CancelledBatch(
                                    count: count,
                                    maxConcurrency: maxConcurrency,
                                    answered: answered,
                                    isCollection: isCollection
                                )
                            )
                        }
                    }
                }
            }
            return batches
        }
    }

    @Test(
        "cancelled mid-batch, sendAll and sendEach account for every request read, and read only what they sent",
        .timeLimit(.minutes(1)),
        arguments: CancelledBatch.all
    )
    func cancelledBatchAccounting(batch: CancelledBatch) async throws {
        for api in ["sendAll", "sendEach"] {
            // The first `answered` requests (by index) answer at once; the others hang until cancelled.
            let started = Arrivals()
            let transport = MockTransport { request in
                let index = Int(request.url!.lastPathComponent)!
                started.arrive()
                if index < batch.answered { return .ok }
                try await waitForCancellation()
                return .ok
            }
            let client = Client(baseURL: baseURL, transport: transport)
            let reads = Locked(0)
            let requests = (0..<batch.count).lazy.map { index in
                reads.withLock { $0 += 1 }
                return Request<EmptyResponse>.get("/b/\(index)")
            }
            // The same elements, as a sequence that is not a collection.
            let sequence: AnySequence<Request<EmptyResponse>> = AnySequence { requests.makeIterator() }
            // Requests start in index order, so the answered ones start first; wait for those and for the
            // hanging ones the limit lets in.
            let expectedStarts = min(batch.count, batch.answered + batch.maxConcurrency)
            let task = Task { () -> (results: Int, handled: [Int]) in
                if api == "sendAll" {
                    let results =
                        batch.isCollection
                        ? await client.sendAll(requests, maxConcurrency: batch.maxConcurrency)
                        : await client.sendAll(sequence, maxConcurrency: batch.maxConcurrency)
                    return (results.count, [])
                }
                var handled: [Int] = []
                if batch.isCollection {
                    await client.sendEach(requests, maxConcurrency: batch.maxConcurrency) { index, _ in
                        handled.append(index)
                    }
                } else {
                    await client.sendEach(sequence, maxConcurrency: batch.maxConcurrency) { index, _ in
                        handled.append(index)
                    }
                }
                return (0, handled)
            }
            await started.wait(for: expectedStarts)
            task.cancel()
            let (resultCount, handled) = await task.join()

            // Nothing is read that was not sent: reading stops with the cancellation.
            #expect(reads.value == transport.callCount, "\(api)")
            #expect(transport.callCount == expectedStarts, "\(api)")
            if api == "sendAll" {
                #expect(resultCount == (batch.isCollection ? batch.count : reads.value), "\(api)")
            } else {
                #expect(handled.sorted() == Array(0..<reads.value), "\(api)")
            }
        }
    }
}
