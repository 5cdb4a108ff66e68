import CourierTesting
import Testing

@testable import Courier

// The time limit guards against a hang, not a speed check: under the thread sanitizer on a busy machine the
// 1,000-waiter test has taken 66 s.
@Suite("AsyncSemaphore", .timeLimit(.minutes(5)))
struct AsyncSemaphoreTests {
    @Test(
        "1,000 waiters, half cancelled at random: the cancelled leave at once, the others are served in FIFO order, no permit leaks"
    )
    func fifoAndCancellation() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()  // held by the test until every waiter is queued
        let served = Locked<[Int]>([])
        var waiters: [Task<Void, any Error>] = []
        for index in 0..<1000 {
            waiters.append(
                Task {
                    try await semaphore.acquire()
                    served.withLock { $0.append(index) }
                    semaphore.release()
                }
            )
            // Start the next waiter only once this one is in the queue, so the queue order is 0, 1, 2, ….
            try await waitUntil { semaphore.waiterCount == index + 1 }
        }

        var generator = SplitMix64(seed: 0x5EED)
        let cancelled = Set(Array(0..<1000).shuffled(using: &generator).prefix(500))
        for index in cancelled { waiters[index].cancel() }

        // Task.cancel() runs the cancellation handler synchronously: the waiters have already left.
        #expect(semaphore.waiterCount == 500)
        for index in cancelled {
            await #expect(throws: CancellationError.self) { try await waiters[index].join() }
        }
        #expect(semaphore.availablePermits == 0)

        semaphore.release()
        for (index, waiter) in waiters.enumerated() where !cancelled.contains(index) {
            try await waiter.join()
        }

        #expect(served.value == (0..<1000).filter { !cancelled.contains($0) })
        #expect(semaphore.availablePermits == 1)
        #expect(semaphore.waiterCount == 0)
    }

    @Test("cancellations racing with releases never leak, duplicate or over-grant a permit")
    func cancellationRacingWithReleases() async throws {
        let semaphore = AsyncSemaphore(permits: 3)
        let holders = RequestCounter()
        let outcomes = Locked<(served: [Int], cancelled: Int)>(([], 0))
        var generator = SplitMix64(seed: 42)
        let toCancel = Set(Array(0..<1000).shuffled(using: &generator).prefix(500))

        await withTaskGroup(of: Void.self) { group in
            var tasks: [Int: Task<Void, Never>] = [:]
            for index in 0..<1000 {
                let task = Task {
                    do {
                        try await semaphore.acquire()
                    } catch {
                        outcomes.withLock { $0.cancelled += 1 }
                        return
                    }
                    holders.recordStart()
                    await Task.yield()
                    holders.recordEnd(.succeeded)
                    outcomes.withLock { $0.served.append(index) }
                    semaphore.release()
                }
                tasks[index] = task
                group.addTask { await task.join() }
                // Cancel while everything is moving: some waiters are queued, some are being handed a permit.
                if toCancel.contains(index) { task.cancel() }
            }
        }

        let (served, cancelledCount) = outcomes.value
        #expect(served.count + cancelledCount == 1000)
        #expect(Set(served).count == served.count)
        #expect(Set(served).isSuperset(of: Set(0..<1000).subtracting(toCancel)))
        #expect(cancelledCount <= 500)
        #expect(holders.snapshot.peak <= 3)
        #expect(semaphore.availablePermits == 3)
        #expect(semaphore.waiterCount == 0)
    }

    @Test("a released permit goes to the first waiter, never to a newcomer")
    func noStealing() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()
        let waiter = Task { try await semaphore.acquire() }
        try await waitUntil { semaphore.waiterCount == 1 }

        semaphore.release()

        // The permit was handed to the waiter, even if it has not resumed yet.
        #expect(semaphore.tryAcquire() == false)
        #expect(semaphore.availablePermits == 0)
        try await waiter.join()
        semaphore.release()
        #expect(semaphore.tryAcquire() == true)
    }

    @Test("a task already cancelled gets no permit and leaves the pool as it was")
    func alreadyCancelled() async throws {
        let semaphore = AsyncSemaphore(permits: 2)
        let start = Gate()
        let task = Task {
            await start.wait()
            try await semaphore.acquire()
        }
        task.cancel()
        start.open()

        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(semaphore.availablePermits == 2)
    }

    @Test("with maxWaiters, one waiter too many fails at once")
    func boundedQueue() async throws {
        let semaphore = AsyncSemaphore(permits: 1, maxWaiters: 2)
        try await semaphore.acquire()
        let first = Task { try await semaphore.acquire() }
        let second = Task { try await semaphore.acquire() }
        try await waitUntil { semaphore.waiterCount == 2 }

        await #expect(throws: AsyncSemaphore.QueueFull.self) { try await semaphore.acquire() }

        // Either task may have queued first, so both are let through before either is awaited: awaiting
        // `first` after one release would wait forever whenever `second` was ahead of it.
        semaphore.release()
        semaphore.release()
        try await first.join()
        try await second.join()
        semaphore.release()
        #expect(semaphore.availablePermits == 1)
    }
}
