import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Whether the current task prefers a task executor (`ManualClock.run`'s, in these tests).
private func prefersAnExecutor() -> Bool {
    withUnsafeCurrentTask { $0?.unownedTaskExecutor != nil }
}

/// One chunk, then nothing until cancelled; records whether the task that reads it prefers an executor.
private struct RecordingChunks: AsyncSequence, Sendable {
    let seen: Locked<Bool?>
    let read: Arrivals

    struct AsyncIterator: AsyncIteratorProtocol {
        let seen: Locked<Bool?>
        let read: Arrivals
        var sent = false

        mutating func next() async throws -> Data? {
            if !sent {
                sent = true
                seen.withLock { $0 = prefersAnExecutor() }
                read.arrive()
                return Data("chunk".utf8)
            }
            try await Task.sleep(for: .seconds(3_600))
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(seen: seen, read: read) }
}

/// A clock whose sleep records whether the sleeping task prefers an executor, then waits until cancelled.
private struct RecordingClock: Clock {
    let seen: Locked<Bool?>
    let slept: Arrivals
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        seen.withLock { $0 = prefersAnExecutor() }
        slept.arrive()
        try await Task.sleep(for: .seconds(3_600))
    }
}

/// The tasks Courier starts for a streamed body (the pump of `StreamedBody(chunks)`, the idle and total timeouts'
/// watchdog) run where `ManualClock.run` counts them, as the work it shares between callers does: time does not
/// move while they run.
@Suite("Streamed bodies' own tasks under ManualClock.run", .timeLimit(.minutes(1)))
struct StreamExecutorTests {
    @Test("StreamedBody(chunks)'s pump and the stream watchdog prefer ManualClock.run's executor")
    func pumpAndWatchdogKeepTheRunsExecutor() async throws {
        let pumpSeen = Locked<Bool?>(nil)
        let watchSeen = Locked<Bool?>(nil)
        let read = Arrivals()
        let slept = Arrivals()
        try await ManualClock().run {
            let body = StreamedBody(RecordingChunks(seen: pumpSeen, read: read))
            let clock = RecordingClock(seen: watchSeen, slept: slept)
            StreamWatchdog.watch(
                body,
                idleTimeout: .seconds(30),
                totalTimeout: nil,
                from: clock.now,
                clock: clock,
                request: URLRequest(url: testURL)
            )
            await read.wait(for: 1)
            await slept.wait(for: 1)
            body.cancel()
        }
        #expect(pumpSeen.value == true)
        #expect(watchSeen.value == true)
    }
}
