import Testing

@testable import Courier

@Suite("AsyncSemaphoreStateMachine")
struct AsyncSemaphoreStateMachineTests {
    /// Waiters are names, so a test can see which one a release hands the permit to.
    private typealias Machine = AsyncSemaphoreStateMachine<String>

    /// A machine whose permits are all taken.
    private func exhausted(permits: Int = 1, maxWaiters: Int? = nil) -> Machine {
        var machine = Machine(permits: permits, maxWaiters: maxWaiters)
        for _ in 0..<permits { #expect(machine.acquire() == .acquired) }
        return machine
    }

    /// Makes `name` wait on `machine` and returns its id.
    private func wait(_ name: String, on machine: inout Machine) -> Int {
        let action = machine.acquire()
        guard case .suspend(let id) = action else {
            Issue.record("\(name) was told \(action), not to suspend")
            return -1
        }
        #expect(machine.enqueue(name, id: id, isCancelled: false) == .waiting)
        return id
    }

    @Test("acquire takes free permits and then asks to suspend, with a new id each time")
    func acquireUntilExhausted() {
        var machine = Machine(permits: 2, maxWaiters: nil)
        #expect(machine.acquire() == .acquired)
        #expect(machine.availablePermits == 1)
        #expect(machine.tryAcquire() == true)
        #expect(machine.availablePermits == 0)
        #expect(machine.tryAcquire() == false)
        #expect(machine.acquire() == .suspend(id: 1))
        #expect(machine.acquire() == .suspend(id: 2))
        #expect(machine.availablePermits == 0)
    }

    @Test("a release hands the permit to the first waiter still waiting, in FIFO order; the pool stays empty")
    func releaseServesFIFO() {
        var machine = exhausted()
        _ = wait("a", on: &machine)
        _ = wait("b", on: &machine)
        _ = wait("c", on: &machine)
        #expect(machine.waiterCount == 3)

        #expect(machine.release() == "a")
        #expect(machine.availablePermits == 0)
        #expect(machine.tryAcquire() == false)  // no newcomer takes a permit ahead of the queue
        #expect(machine.release() == "b")
        #expect(machine.release() == "c")
        #expect(machine.waiterCount == 0)
        #expect(machine.release() == nil)
        #expect(machine.availablePermits == 1)
    }

    @Test("a cancelled waiter leaves the queue, is returned to be resumed once, and a release skips it")
    func cancelLeavesQueue() {
        var machine = exhausted()
        let a = wait("a", on: &machine)
        _ = wait("b", on: &machine)

        #expect(machine.cancel(id: a) == "a")
        #expect(machine.cancel(id: a) == nil)
        #expect(machine.waiterCount == 1)
        #expect(machine.release() == "b")
        #expect(machine.availablePermits == 0)
    }

    @Test("a waiter cancelled after it was handed a permit keeps the permit")
    func cancelAfterServed() {
        var machine = exhausted()
        let a = wait("a", on: &machine)
        #expect(machine.release() == "a")
        #expect(machine.cancel(id: a) == nil)
        #expect(machine.availablePermits == 0)
    }

    @Test("a permit released between acquire and enqueue is taken by the enqueue instead of waiting")
    func releaseBeforeEnqueue() {
        var machine = exhausted()
        #expect(machine.acquire() == .suspend(id: 1))
        #expect(machine.release() == nil)
        #expect(machine.enqueue("a", id: 1, isCancelled: false) == .acquired)
        #expect(machine.availablePermits == 0)
        #expect(machine.waiterCount == 0)
    }

    @Test("a caller cancelled before it enqueues is not queued and takes no permit")
    func cancelledBeforeEnqueue() {
        var machine = exhausted()
        #expect(machine.acquire() == .suspend(id: 1))
        // Its cancellation handler ran first and found nothing to cancel.
        #expect(machine.cancel(id: 1) == nil)
        #expect(machine.release() == nil)
        #expect(machine.enqueue("a", id: 1, isCancelled: true) == .cancelled)
        #expect(machine.waiterCount == 0)
        #expect(machine.availablePermits == 1)
    }

    @Test("with maxWaiters, one caller too many is refused at acquire and at enqueue")
    func boundedQueue() {
        var machine = exhausted(maxWaiters: 1)
        #expect(machine.acquire() == .suspend(id: 1))
        #expect(machine.acquire() == .suspend(id: 2))
        #expect(machine.enqueue("a", id: 1, isCancelled: false) == .waiting)
        #expect(machine.enqueue("b", id: 2, isCancelled: false) == .queueFull)
        #expect(machine.acquire() == .queueFull)
        #expect(machine.waiterCount == 1)

        #expect(machine.release() == "a")
        #expect(wait("c", on: &machine) == 3)
    }

    @Test("maxWaiters 0 never lets a caller wait")
    func noWaiting() {
        var machine = exhausted(maxWaiters: 0)
        #expect(machine.acquire() == .queueFull)
    }

    @Test("waiters that leave do not grow the queue without bound")
    func queueStaysCompact() {
        var machine = exhausted()
        let stays = wait("first", on: &machine)
        for index in 0..<10_000 {
            let id = wait("w\(index)", on: &machine)
            #expect(machine.cancel(id: id) == "w\(index)")
        }
        #expect(machine.waiterCount == 1)
        #expect(machine.queueStorageCount <= 2 * machine.waiterCount + 32)
        #expect(machine.cancel(id: stays) == "first")
        #expect(machine.queueStorageCount <= 32)
        #expect(machine.release() == nil)
        #expect(machine.queueStorageCount == 0)
    }
}
