import CourierTesting
import Foundation
import Testing

@testable import Courier

/// A reader that sees the end of a body sees everything that ends with it: the end hooks (the request counter's
/// in-flight count, the idle watchdog) have run before the reader is resumed, whichever side ends the body.
///
/// The reader runs on a ``StepExecutor`` that only queues its jobs, so "resumed" is observable without a race:
/// resuming the reader's continuation queues a job, and an end hook that finds a job queued ran too late.
@Suite("ChunkPipe: end hooks run before the reader sees the end", .timeLimit(.minutes(1)))
struct ChunkPipeEndOrderTests {
    /// How a body ends while its reader waits.
    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case failedByReaderSide, finishedCleanly, finishedWithError
        var testDescription: String { rawValue }
    }

    @Test("the end hooks have run when a waiting reader is resumed", arguments: Ending.allCases)
    func hooksBeforeResume(ending: Ending) async throws {
        let pipe = ChunkPipe()
        let executor = StepExecutor()
        let readerResumedFirst = Locked<Bool?>(nil)
        pipe.onEnd { _ in readerResumedFirst.withLock { $0 = executor.pendingJobs > 0 } }
        let reader = Task(executorPreference: executor) { try await pipe.next() }
        // Run the reader until it waits in `next()` (nothing is buffered, so it must).
        while executor.pendingJobs > 0 { executor.runPending() }
        switch ending {
        case .failedByReaderSide: pipe.fail(CourierError(.timedOut, message: "idle"))
        case .finishedCleanly: pipe.finish(error: nil)
        case .finishedWithError: pipe.finish(error: CourierError(.transport, message: "reset"))
        }
        #expect(readerResumedFirst.value == false)
        // Let the reader finish.
        while executor.pendingJobs > 0 { executor.runPending() }
        _ = await reader.result
    }
}

/// A task executor that runs nothing by itself: jobs wait until the test calls ``runPending()``.
private final class StepExecutor: TaskExecutor, @unchecked Sendable {
    // `jobs` is guarded by `lock`.
    private let lock = NSLock()
    private var jobs: [UnownedJob] = []

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.withLock { jobs.append(job) }
    }

    var pendingJobs: Int { lock.withLock { jobs.count } }

    /// Runs the jobs queued now, on the calling thread.
    func runPending() {
        let ready = lock.withLock {
            defer { jobs = [] }
            return jobs
        }
        for job in ready { job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
