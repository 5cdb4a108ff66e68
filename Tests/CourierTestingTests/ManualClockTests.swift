import CourierTesting
import Testing

@Suite("ManualClock")
struct ManualClockTests {
    @Test("a sleeper wakes only when time reaches its deadline", .timeLimit(.minutes(1)))
    func wakesAtDeadline() async throws {
        let clock = ManualClock()
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
        try await task.value
        #expect(woke.value == true)
        #expect(clock.now.offset == .seconds(5))
    }

    @Test("cancelling a sleeper throws CancellationError at once", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("sleepers wake in deadline order", .timeLimit(.minutes(1)))
    func order() async throws {
        let clock = ManualClock()
        let order = Locked<[Int]>([])
        await withThrowingTaskGroup(of: Void.self) { group in
            for seconds in [3, 1, 2] {
                group.addTask {
                    try await clock.sleep(for: .seconds(seconds))
                    order.withLock { $0.append(seconds) }
                }
            }
            await clock.waitForSleepers(count: 3)
            clock.advanceToNextDeadline()
            while order.value.count < 1 { await Task.yield() }
            clock.advanceToNextDeadline()
            while order.value.count < 2 { await Task.yield() }
            clock.advanceToNextDeadline()
        }
        #expect(order.value == [1, 2, 3])
    }
}
