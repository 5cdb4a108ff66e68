import CourierTesting
import Testing

/// The kit's waits end when the waiting task is cancelled (a test's time limit passing), so that a broken
/// behaviour makes a test fail instead of hanging the run.
@Suite("Waits that end on cancellation", .timeLimit(.minutes(1)))
struct CancellableWaitTests {
    /// A wait of the kit, started on a fresh object for a target that is never reached.
    enum Wait: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case arrivals = "Arrivals.wait(for:)"
        case holding = "HoldingTransport.waitUntilHolding(_:)"
        case sleepers = "ManualClock.waitForSleepers(count:)"

        var testDescription: String { rawValue }

        /// Waits, and returns what the object counted when the wait ended.
        func run() async -> Int {
            switch self {
            case .arrivals:
                let arrivals = Arrivals()
                await arrivals.wait(for: 1_000)
                let counted = arrivals.count
                arrivals.arrive()  // a later arrival finds no stale waiter to resume
                #expect(arrivals.count == 1)
                return counted
            case .holding:
                let holding = HoldingTransport()
                await holding.waitUntilHolding(5)
                return holding.heldCount
            case .sleepers:
                let clock = ManualClock()
                await clock.waitForSleepers(count: 3)
                return clock.sleeperCount
            }
        }
    }

    @Test("a wait returns when its task is cancelled, before its target is reached", arguments: Wait.allCases)
    func cancelled(wait: Wait) async {
        let started = Gate()
        let waiter = Task {
            started.open()
            return await wait.run()
        }
        await started.wait()
        waiter.cancel()
        #expect(await waiter.join() == 0)
    }

    @Test("Arrivals.wait in an already cancelled task returns at once")
    func arrivalsAlreadyCancelled() async {
        let arrivals = Arrivals()
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await arrivals.wait(for: 1)
            return Task.isCancelled
        }
        #expect(await waiter.join())
    }
}
