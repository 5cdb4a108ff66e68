import CourierTesting
import Testing

/// The kit's waits end when the waiting task is cancelled (a test's time limit passing), so that a broken
/// behaviour makes a test fail instead of hanging the run.
@Suite("Waits that end on cancellation", .timeLimit(.minutes(1)))
struct CancellableWaitTests {
    @Test("Arrivals.wait returns when its task is cancelled, before the target is reached")
    func arrivals() async {
        let arrivals = Arrivals()
        let started = Gate()
        let waiter = Task {
            started.open()
            await arrivals.wait(for: 1_000)
            return arrivals.count
        }
        await started.wait()
        waiter.cancel()
        #expect(await waiter.value == 0)
        arrivals.arrive()  // a later arrival finds no stale waiter to resume
        #expect(arrivals.count == 1)
    }

    @Test("Arrivals.wait in an already cancelled task returns at once")
    func arrivalsAlreadyCancelled() async {
        let arrivals = Arrivals()
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await arrivals.wait(for: 1)
            return Task.isCancelled
        }
        #expect(await waiter.value)
    }

    @Test("HoldingTransport.waitUntilHolding returns when its task is cancelled")
    func holding() async {
        let holding = HoldingTransport()
        let started = Gate()
        let waiter = Task {
            started.open()
            await holding.waitUntilHolding(5)
            return holding.heldCount
        }
        await started.wait()
        waiter.cancel()
        #expect(await waiter.value == 0)
    }

    @Test("ManualClock.waitForSleepers returns when its task is cancelled")
    func sleepers() async {
        let clock = ManualClock()
        let started = Gate()
        let waiter = Task {
            started.open()
            await clock.waitForSleepers(count: 3)
            return clock.sleeperCount
        }
        await started.wait()
        waiter.cancel()
        #expect(await waiter.value == 0)
    }
}
