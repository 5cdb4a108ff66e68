import CourierTesting
import Testing

/// Waits until a task sleeps on `clock`, cancels `task`, and expects it to end with `CancellationError`.
func expectCancelledWhileAsleep<Success: Sendable>(
    _ task: Task<Success, any Error>,
    on clock: ManualClock,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    await clock.waitForSleepers(count: 1)
    task.cancel()
    await #expect(throws: CancellationError.self, sourceLocation: sourceLocation) { try await task.join() }
}
