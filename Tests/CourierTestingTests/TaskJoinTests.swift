import CourierTesting
import Testing

/// `join()` passes the waiting task's cancellation on to the task it waits for, so that a test cancelled by its
/// time limit does not keep waiting for a call that sleeps on a clock nobody advances.
@Suite("Task.join()", .timeLimit(.minutes(1)))
struct TaskJoinTests {
    @Test("join() of a throwing task cancels it when the waiting task is cancelled, and throws its error")
    func throwingTask() async throws {
        let clock = ManualClock()
        let cancelled = Gate()
        let call = Task {
            try await withTaskCancellationHandler {
                try await clock.sleep(for: .seconds(60))
                return "slept"
            } onCancel: {
                cancelled.open()
            }
        }
        let waiter = Task { try await call.join() }
        await clock.waitForSleepers(count: 1)
        waiter.cancel()
        // Were the cancellation not passed on, only the time limit would end this wait.
        let passedOn = (try? await cancelled.waitUnlessCancelled()) != nil
        clock.advance(by: .seconds(60))  // lets the call end either way
        #expect(passedOn)
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test("join() of a task that cannot throw cancels it when the waiting task is cancelled")
    func nonThrowingTask() async throws {
        let clock = ManualClock()
        let cancelled = Gate()
        let call = Task {
            await withTaskCancellationHandler {
                (try? await clock.sleep(for: .seconds(60))) == nil ? "cancelled" : "slept"
            } onCancel: {
                cancelled.open()
            }
        }
        let waiter = Task { await call.join() }
        await clock.waitForSleepers(count: 1)
        waiter.cancel()
        let passedOn = (try? await cancelled.waitUnlessCancelled()) != nil
        clock.advance(by: .seconds(60))
        #expect(passedOn)
        #expect(await waiter.value == "cancelled")
    }

    @Test("join() returns the task's value when nobody cancels", arguments: [0, 1, 7])
    func value(steps: Int) async throws {
        let clock = ManualClock()
        let call = Task {
            for _ in 0..<steps { try await clock.sleep(for: .seconds(1)) }
            return steps
        }
        for _ in 0..<steps {
            await clock.waitForSleepers(count: 1)
            clock.advanceToNextDeadline()
        }
        #expect(try await call.join() == steps)
    }
}
