import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What only the timeout's shared timer does (the one `.timeout(_:)` uses with `ContinuousClock`), driven by a
/// `ManualClock` through the internal factory that takes the timer. `TimeoutTests` runs the behaviour both
/// kinds of timer share over each of them.
@Suite("Timeout with a shared timer", .timeLimit(.minutes(1)))
struct DeadlineTimerTests {
    private let clock = ManualClock()
    private let timer: DeadlineTimer<ManualClock>
    private let hanging = MockTransport(.hang)

    init() {
        timer = DeadlineTimer(clock: clock)
    }

    /// A client with `.timeout(duration)` on the suite's shared timer, over a transport that hangs until cancelled.
    private func clientTimingOut(after duration: Duration) -> Client {
        Client(transport: hanging, middleware: [.timeout(duration, timer: timer)])
    }

    @Test("at the deadline the transport is cancelled and the caller gets timedOut; the queue empties")
    func firesAndCancels() async throws {
        let client = clientTimingOut(after: .milliseconds(100))
        let task = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(timer.pendingCount == 1)
        clock.advance(by: .milliseconds(99))
        #expect(hanging.cancellationCount == 0)
        clock.advance(by: .milliseconds(1))
        await RetryFixtures.expectTimedOut(task, after: .milliseconds(100), on: clock)
        #expect(timer.pendingCount == 0)
        #expect(hanging.cancellationCount == 1)
        try await waitUntil { !timer.driverIsRunning }
        #expect(clock.sleeperCount == 0)
    }

    @Test("1,000 requests in flight share one sleeping task, and all of them time out at their deadline")
    func oneSleeperForMany() async throws {
        let total = 1_000
        let client = clientTimingOut(after: .seconds(1))
        try await withThrowingTaskGroup(of: CourierError.Code?.self) { group in
            for _ in 0..<total {
                group.addTask {
                    do {
                        _ = try await client.send(RetryFixtures.request())
                        return nil
                    } catch let error as CourierError {
                        return error.code
                    }
                }
            }
            try await waitUntil { timer.pendingCount == total }
            await clock.waitForSleepers(count: 1)
            #expect(clock.sleeperCount == 1)
            #expect(hanging.cancellationCount == 0)
            clock.advance(by: .seconds(1))
            var codes: [CourierError.Code?] = []
            for try await code in group {
                codes.append(code)
            }
            #expect(codes.count == total)
            #expect(codes.allSatisfy { $0 == .timedOut })
        }
        #expect(hanging.cancellationCount == total)
        #expect(timer.pendingCount == 0)
    }

    @Test("requests started at different times each time out at their own deadline")
    func staggered() async throws {
        let client = clientTimingOut(after: .milliseconds(100))
        let first = Task { try await client.send(RetryFixtures.request()) }
        try await waitUntil { timer.pendingCount == 1 }
        clock.advance(by: .milliseconds(40))
        let second = Task { try await client.send(RetryFixtures.request()) }
        try await waitUntil { timer.pendingCount == 2 }

        clock.advance(by: .milliseconds(60))  // t = 100 ms: the first deadline
        let firstError = await #expect(throws: CourierError.self) { try await first.join() }
        #expect(firstError?.code == .timedOut)
        #expect(hanging.cancellationCount == 1)
        #expect(timer.pendingCount == 1)

        // The driver went back to sleep until the second deadline, t = 140 ms.
        try await waitUntil { clock.pendingDeadlines == [ManualClock.Instant(offset: .milliseconds(140))] }
        clock.advance(by: .milliseconds(39))
        #expect(hanging.cancellationCount == 1)
        clock.advance(by: .milliseconds(1))
        let secondError = await #expect(throws: CourierError.self) { try await second.join() }
        #expect(secondError?.code == .timedOut)
        #expect(hanging.cancellationCount == 2)
    }

    @Test("a response in time leaves the queue at once; the idle driver ends at the old deadline")
    func responseInTime() async throws {
        try await RetryFixtures.expectAnsweredInTime(through: .timeout(.seconds(1), timer: timer), on: clock)
        #expect(timer.pendingCount == 0)
        #expect(timer.driverIsRunning)  // asleep until the deadline that no longer matters
        clock.advance(by: .seconds(1))
        try await waitUntil { !timer.driverIsRunning }
        #expect(clock.sleeperCount == 0)
    }

    @Test("a nearer enclosing deadline is waited for the per-request way, and reported as the outer timeout")
    func nearerOuterDeadline() async throws {
        let client = clientTimingOut(after: .seconds(1))
        let task = Task {
            try await Deadline.$current.withValue(Deadline(after: .milliseconds(50), clock: clock)) {
                try await client.send(RetryFixtures.request())
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(timer.pendingCount == 0)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .milliseconds(50))])
        clock.advanceToNextDeadline()
        let error = await #expect(throws: CourierError.self) { try await task.join() }
        #expect(error?.code == .timedOut)
        #expect(error?.timeout == .milliseconds(50))
    }

    @Test("a call whose chain works a while before it first suspends is still cut at its own deadline")
    func deadlineArmedBeforeTheChain() async throws {
        // The call's first layer works synchronously for 600 ms of the clock (signing a large body, say), during
        // which another call's later deadline reaches the timer. The call's deadline, read before its chain
        // started, must still come first in the timer's queue: armed when its chain first suspended, it queued
        // behind the other one, and the driver, which sleeps until the head's deadline, cut it 600 ms late.
        let later = DeadlineWork()
        let prelude = Middleware(name: "prelude") { [clock, timer] request, next in
            clock.advance(by: .milliseconds(600))
            timer.arm(later, at: clock.now.advanced(by: .seconds(1)))
            return try await next(request)
        }
        let client = Client(transport: hanging, middleware: [.timeout(.seconds(1), timer: timer), prelude])
        let task = Task { try await client.send(RetryFixtures.request()) }
        try await waitUntil { timer.pendingCount == 2 }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(400))
        await RetryFixtures.expectTimedOut(task, after: .seconds(1), on: clock)
        #expect(hanging.cancellationCount == 1)
        timer.release(later)
        clock.advance(by: .milliseconds(600))
        try await waitUntil { !timer.driverIsRunning }
    }

    @Test("a request that ended behind a straggler leaves no response in the timer's queue")
    func endedWorkKeepsNoResponse() async throws {
        let transport = StragglerTransport()
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.timeout(.seconds(1), timer: timer)]
        )
        let straggler = Task { try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("slow"))) }
        try await waitUntil { timer.pendingCount == 1 }
        let fast = Task {
            _ = try await client.send(URLRequest(url: exampleBaseURL.appendingPathComponent("fast")))
        }
        // Armed behind the straggler, then answered.
        try await waitUntil { timer.pendingCount == 2 }
        transport.release.open()
        try await fast.join()
        // The fast request's work has ended but waits behind the straggler's, at the head of the queue, until the
        // straggler ends: it must not hold the response (or its body) until then.
        #expect(timer.pendingCount == 2)
        #expect(transport.lastResponse == nil)
        straggler.cancel()
        _ = try? await straggler.join()
        #expect(timer.pendingCount == 0)
        // The idle driver ends at the straggler's old deadline.
        clock.advance(by: .seconds(1))
        try await waitUntil { !timer.driverIsRunning }
    }

    // MARK: Work a transport attaches to (a timeout that leaves its deadline to the transport arms it)

    /// Work armed for a deadline 100 ms from now, with no task: what such a timeout hands down.
    private func armedWork() -> DeadlineWork {
        let work = DeadlineWork(owner: timer)
        timer.arm(work, at: clock.now.advanced(by: .milliseconds(100)))
        return work
    }

    @Test("the task attached to armed work is cancelled at its deadline, not a moment before")
    func attachedTaskCancelledAtDeadline() async throws {
        let work = armedWork()
        let attached = Gate()
        let reader = Task {
            #expect(timer.attach(work))
            attached.open()
            do {
                try await Gate().waitUnlessCancelled()
            } catch {
                await timer.detach(work)
                throw error
            }
        }
        await attached.wait()
        #expect(timer.holdsTask(work))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(99))
        #expect(!work.didFire)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: CancellationError.self) { try await reader.join() }
        #expect(work.didFire)
        #expect(!timer.holdsTask(work))
        // A later read under the same passed deadline cancels itself as it attaches.
        let late = await Task { timer.attach(work) && Task.isCancelled }.value
        #expect(late)
    }

    @Test("attempts under one deadline attach one after another; a second at once, or after the end, is refused")
    func attachOneAtATime() async throws {
        let work = armedWork()
        let first = Gate()
        let release = Gate()
        let holder = Task {
            let attached = timer.attach(work)
            first.open()
            await release.wait()
            await timer.detach(work)
            return attached
        }
        await first.wait()
        #expect(await Task { timer.attach(work) }.value == false)
        release.open()
        #expect(await holder.join())
        #expect(!timer.holdsTask(work))
        // The next attempt, after the first let go.
        let second = await Task {
            let attached = timer.attach(work)
            let cancelled = Task.isCancelled
            await timer.detach(work)
            return attached && !cancelled
        }.value
        #expect(second)
        // The timeout ends its work; nothing attaches to it afterwards, and its deadline cancels nothing.
        #expect(timer.tryEnd(work))
        #expect(await Task { timer.attach(work) }.value == false)
        #expect(timer.pendingCount == 0)
    }

}

/// The `ContinuousClock` path that `.timeout(_:)` takes by default, in real time.
@Suite("Timeout on the continuous clock", .timeLimit(.minutes(1)))
struct ContinuousTimeoutTests {
    @Test("a transport that never answers is cancelled once the real deadline passes")
    func realDeadline() async throws {
        let transport = MockTransport(.hang)
        let client = Client(transport: transport, middleware: [.timeout(.milliseconds(20))])
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: CourierError.self) { try await client.send(RetryFixtures.request()) }
        #expect(error?.code == .timedOut)
        #expect(error?.timeout == .milliseconds(20))
        #expect(clock.now - start >= .milliseconds(20))
        #expect(transport.cancellationCount == 1)
    }

    @Test("answers that suspend come back through the default timeout")
    func answersThatSuspend() async throws {
        let transport = MockTransport { _ in
            await Task.yield()
            return .status(204)
        }
        let client = Client(transport: transport, middleware: [.timeout(.seconds(30))])
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { try await client.send(RetryFixtures.request()).1.statusCode }
            }
            for try await status in group {
                #expect(status == 204)
            }
        }
        #expect(transport.cancellationCount == 0)
    }
}

/// Holds a request to `/slow` until it is cancelled, and answers any other once ``release`` opens, keeping only a weak
/// reference to the response it made.
private final class StragglerTransport: Transport, @unchecked Sendable {
    // @unchecked Sendable: `weakResponse` is only touched with `lock` held.
    let release = Gate()
    private let lock = NSLock()
    private weak var weakResponse: HTTPURLResponse?

    /// The last response made, while something else keeps it alive.
    var lastResponse: HTTPURLResponse? { lock.withLock { weakResponse } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        if request.url?.lastPathComponent == "slow" {
            try await Gate().waitUnlessCancelled()
            throw CancellationError()
        }
        await release.wait()
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        lock.withLock { weakResponse = response }
        return (Data(repeating: 0x61, count: 1_000), response)
    }
}
