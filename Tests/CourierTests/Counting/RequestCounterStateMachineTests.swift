import Testing

@testable import Courier

@Suite("RequestCounterStateMachine")
struct RequestCounterStateMachineTests {
    private typealias Machine = RequestCounterStateMachine<String>

    @Test("a start counts one in flight and one started, and raises the peak")
    func start() {
        var machine = Machine()
        let first = machine.start()
        let second = machine.start()
        #expect(first == RequestCounter.Change(event: .started, snapshot: .init(inFlight: 1, peak: 1, started: 1)))
        #expect(second.snapshot == RequestCounter.Snapshot(inFlight: 2, peak: 2, started: 2))
        #expect(machine.isIdle == false)
    }

    @Test(
        "each outcome ends one request and reports its own event",
        arguments: [RequestCounter.Outcome.succeeded, .failed, .cancelled]
    )
    func end(outcome: RequestCounter.Outcome) {
        var machine = Machine()
        _ = machine.start()
        let action = machine.end(outcome)

        let event: RequestCounter.Change.Event
        var after = RequestCounter.Snapshot(peak: 1, started: 1)
        switch outcome {
        case .succeeded: (event, after.succeeded) = (.succeeded, 1)
        case .failed: (event, after.failed) = (.failed, 1)
        case .cancelled: (event, after.cancelled) = (.cancelled, 1)
        }
        #expect(action.change == RequestCounter.Change(event: event, snapshot: after))
        #expect(machine.counts == after)
        #expect(machine.isIdle)
    }

    @Test("the peak stays at the highest number in flight, and the counts always add up")
    func peakAndInvariant() {
        var machine = Machine()
        let steps: [RequestCounter.Outcome?] = [nil, nil, nil, .succeeded, .failed, nil, .cancelled, .succeeded]
        for step in steps {
            if let outcome = step { _ = machine.end(outcome) } else { _ = machine.start() }
            let counts = machine.counts
            #expect(counts.started == counts.succeeded + counts.failed + counts.cancelled + counts.inFlight)
            #expect(counts.inFlight >= 0)
        }
        #expect(machine.counts == RequestCounter.Snapshot(peak: 3, started: 4, succeeded: 2, failed: 1, cancelled: 1))
    }

    @Test("only the end that leaves nothing in flight hands back the idle waiters")
    func waitersOnIdle() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.start()
        let ticket = machine.idleWaiters.begin()
        #expect(machine.idleWaiters.park(ticket, "waiter", isIdle: machine.isIdle) == .suspend)

        #expect(machine.end(.succeeded).resume.isEmpty)
        #expect(machine.idleWaiters.count == 1)
        #expect(machine.end(.failed).resume == ["waiter"])
        #expect(machine.idleWaiters.count == 0)
    }

    @Test("a waiter arriving while nothing is in flight does not wait")
    func idleWaiterReturns() {
        var machine = Machine()
        let ticket = machine.idleWaiters.begin()
        #expect(machine.idleWaiters.park(ticket, "waiter", isIdle: machine.isIdle) == .resume)
    }
}
