import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("ManualClock", .timeLimit(.minutes(1)))
struct ManualClockTests {
    /// A fresh clock for each test: Swift Testing makes a new suite instance per test.
    private let clock = ManualClock()

    @Test("a sleeper wakes only when time reaches its deadline")
    func wakesAtDeadline() async throws {
        let woke = Locked(false)
        let task = Task {
            try await clock.sleep(for: .seconds(5))
            woke.withLock { $0 = true }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        #expect(woke.value == false)
        clock.advance(by: .seconds(1))
        try await task.join()
        #expect(woke.value == true)
        #expect(clock.now.offset == .seconds(5))
    }

    @Test("cancelling a sleeper throws CancellationError at once")
    func cancellation() async throws {
        await expectCancelledWhileAsleep(Task { try await clock.sleep(for: .seconds(60)) }, on: clock)
        #expect(clock.sleeperCount == 0)
    }

    @Test("sleepers wake in deadline order")
    func order() async throws {
        let order = Locked<[Int]>([])
        let woken = Arrivals()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for seconds in [3, 1, 2] {
                group.addTask {
                    try await clock.sleep(for: .seconds(seconds))
                    order.withLock { $0.append(seconds) }
                    woken.arrive()
                }
            }
            await clock.waitForSleepers(count: 3)
            for step in 1...3 {
                clock.advanceToNextDeadline()
                await woken.wait(for: step)
                #expect(clock.now.offset == .seconds(step))
            }
            try await group.waitForAll()
        }
        #expect(order.value == [1, 2, 3])
    }

    @Test("advance(to:) wakes everyone due by then and leaves later sleepers asleep")
    func advanceTo() async throws {
        let early = Task { try await clock.sleep(for: .seconds(1)) }
        let onTime = Task { try await clock.sleep(for: .seconds(2)) }
        let late = Task { try await clock.sleep(for: .seconds(3)) }
        await clock.waitForSleepers(count: 3)
        clock.advance(to: ManualClock.Instant(offset: .seconds(2)))
        try await early.join()
        try await onTime.join()
        #expect(clock.sleeperCount == 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(3))])
        late.cancel()
        await #expect(throws: CancellationError.self) { try await late.join() }
    }

    @Test("advancing to an earlier instant does not move time back")
    func noTimeTravel() {
        clock.advance(by: .seconds(5))
        clock.advance(to: ManualClock.Instant(offset: .seconds(2)))
        #expect(clock.now.offset == .seconds(5))
    }

    @Test("a sleep whose deadline has passed returns at once and is counted")
    func pastDeadline() async throws {
        clock.advance(by: .seconds(10))
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(3)))
        #expect(clock.totalSleeps == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test("a task cancelled before it sleeps throws at once and never registers")
    func cancelledBeforeSleeping() async throws {
        let gate = Gate()
        let task = Task {
            await gate.wait()
            try await clock.sleep(for: .seconds(1))
        }
        task.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(clock.sleeperCount == 0)
    }

    @Test("waitForSleepers returns once enough tasks sleep, whatever order they come in")
    func waitForSleepers() async throws {
        let tasks = (1...4).map { seconds in Task { try await clock.sleep(for: .seconds(seconds)) } }
        await clock.waitForSleepers(count: 4)
        #expect(clock.sleeperCount == 4)
        clock.advance(by: .seconds(4))
        for task in tasks { try await task.join() }
        #expect(clock.sleeperCount == 0)
        #expect(clock.totalSleeps == 4)
    }

    @Test("run drives sequential sleeps to completion in virtual time")
    func runSequential() async throws {
        let value = try await clock.run {
            var waited: [Duration] = []
            for delay in [Duration.seconds(1), .seconds(2), .seconds(4)] {
                let start = clock.now
                try await clock.sleep(for: delay)
                waited.append(start.duration(to: clock.now))
            }
            return waited
        }
        #expect(value == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(clock.now.offset == .seconds(7))
        #expect(clock.totalSleeps == 3)
    }

    @Test("run returns the operation's error and stops driving the clock")
    func runThrows() async throws {
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await clock.run {
                try await clock.sleep(for: .seconds(1))
                throw Boom()
            }
        }
        #expect(clock.now.offset == .seconds(1))
    }

    @Test("run with two sleepers per step waits for both before moving time")
    func runTwoSleepers() async throws {
        let finished = try await clock.run(whenSleeping: 2) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask {
                    try await clock.sleep(for: .seconds(5))
                    return 5
                }
                group.addTask {
                    try await clock.sleep(for: .seconds(1))
                    return 1
                }
                let first = try await group.next()
                group.cancelAll()
                return first
            }
        }
        #expect(finished == 1)
        #expect(clock.now.offset == .seconds(1))
    }

    @Test("run needs no count under a whole-call and a per-attempt timeout: an attempt that hangs is cut at 2 s")
    func runWithNestedTimeouts() async throws {
        // The stack the docs recommend: the whole call's timer sleeps beside the attempt's from the start, so
        // two tasks sleep at once. Time must move to the attempt's deadline (2 s), never to the call's (10 s).
        // Repeated, because a wrong rule loses a race between the two timers only most of the time. The rounds,
        // each on a clock of its own, run side by side: one after another, they took over a minute in a
        // sanitized run of the whole suite, each of their many suspensions queued behind every other test.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<25 {
                group.addTask { try await Self.nestedTimeoutsRound(round) }
            }
            try await group.waitForAll()
        }
    }

    private static func nestedTimeoutsRound(_ round: Int) async throws {
        let clock = ManualClock()
        let transport = MockTransport(.hang, then: .status(200, body: "round \(round)"))
        let client = Client(
            transport: transport,
            middleware: [
                .timeout(.seconds(10), clock: clock),
                .retry(RetryPolicy(backoff: .constant(.seconds(1)), budget: nil), clock: clock),
                .timeout(.seconds(2), clock: clock),
                .validatingStatus(),
            ]
        )
        let request = URLRequest(url: URL(string: "https://api.example.test/items")!)

        let (data, response) = try await clock.run { try await client.send(request) }

        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "round \(round)")
        #expect(clock.now.offset == .seconds(3))  // the attempt's 2 s, then 1 s of backoff
        #expect(transport.cancellationCount == 1)
    }

    /// Works on an actor for a while, yielding at every step.
    private actor Worker {
        var steps = 0
        func work() async {
            for _ in 0..<200 {
                steps += 1
                await Task.yield()
            }
        }
    }

    @Test("run waits for a child task's work, on an actor too, before moving time past the child's deadline")
    func runWaitsForChildWork() async throws {
        // One child sleeps 10 s at once; the other works on an actor for a while, then sleeps 1 s. Time must go
        // to 1 s first: while the work runs, the 10 s sleeper is the only one, but the run is not quiescent.
        // The rounds run side by side, each on a clock of its own (see runWithNestedTimeouts).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask { try await Self.childWorkRound() }
            }
            try await group.waitForAll()
        }
    }

    private static func childWorkRound() async throws {
        let clock = ManualClock()
        let worker = Worker()
        let order = try await clock.run {
            try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask {
                    try await clock.sleep(for: .seconds(10))
                    return "slow"
                }
                group.addTask {
                    await worker.work()
                    try await clock.sleep(for: .seconds(1))
                    return "worker at \(clock.now.offset)"
                }
                var order: [String] = []
                for try await name in group { order.append(name) }
                return order
            }
        }
        #expect(order == ["worker at 1.0 seconds", "slow"])
        #expect(await worker.steps == 200)
    }

    @Test("cancelling the task that runs the clock ends the run, even while the operation never sleeps")
    func runEndsOnCancellation() async throws {
        let spinning = Gate()
        let run = Task {
            try await clock.run {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await clock.sleep(for: .seconds(10)) }
                    group.addTask {
                        spinning.open()
                        // Busy, never suspended for long: the run is never quiescent, so time must not move.
                        while !Task.isCancelled { await Task.yield() }
                        throw CancellationError()
                    }
                    try await group.waitForAll()
                }
            }
        }
        await spinning.wait()
        await clock.waitForSleepers(count: 1)
        run.cancel()

        await #expect(throws: CancellationError.self) { try await run.join() }
        #expect(clock.now.offset == .zero)
        #expect(clock.sleeperCount == 0)
    }
}
