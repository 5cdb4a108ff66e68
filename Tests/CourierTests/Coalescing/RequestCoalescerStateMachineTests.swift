import Testing

@testable import Courier

@Suite("RequestCoalescerStateMachine")
struct RequestCoalescerStateMachineTests {
    /// Keys are URLs, waiters are names, calls are names too.
    private typealias Machine = RequestCoalescerStateMachine<String, String, String>

    /// A machine that `callers` (key and waiter) joined in order, not cancelled, with ids 1, 2, ….
    private func joined(_ callers: (key: String, waiter: String)...) -> Machine {
        var machine = Machine()
        for (index, caller) in callers.enumerated() {
            _ = machine.join(caller.key, waiter: caller.waiter, id: index + 1, isCancelled: false)
        }
        return machine
    }

    @Test("waiter ids are distinct")
    func distinctWaiterIDs() {
        var machine = Machine()
        let ids = (0..<100).map { _ in machine.makeWaiterID() }
        #expect(Set(ids).count == 100)
    }

    @Test("the first caller of a key starts a flight, identical callers join it, another key starts its own")
    func firstStartsOthersJoin() {
        var machine = Machine()
        #expect(machine.join("/a", waiter: "a1", id: 1, isCancelled: false) == .start(flightID: 1))
        #expect(machine.join("/a", waiter: "a2", id: 2, isCancelled: false) == .joined)
        #expect(machine.join("/b", waiter: "b1", id: 3, isCancelled: false) == .start(flightID: 2))
        #expect(machine.flightCount == 2)
        #expect(machine.waiterCount == 3)
    }

    @Test("a cancelled caller neither starts nor joins a flight")
    func cancelledCallerStaysOut() {
        var machine = Machine()
        #expect(machine.join("/a", waiter: "a1", id: 1, isCancelled: true) == .cancelled)
        #expect(machine.flightCount == 0)
        #expect(machine.join("/a", waiter: "a2", id: 2, isCancelled: false) == .start(flightID: 1))
        #expect(machine.join("/a", waiter: "a3", id: 3, isCancelled: true) == .cancelled)
        #expect(machine.waiterCount == 1)
    }

    @Test("finishing hands every waiter of the flight the result and forgets the flight")
    func finishResumesAll() {
        var machine = joined(("/a", "a1"), ("/a", "a2"), ("/b", "b1"))
        #expect(machine.attach("call a", to: "/a", flightID: 1) == true)

        #expect(machine.finish("/a", flightID: 1).sorted() == ["a1", "a2"])
        #expect(machine.flightCount == 1)
        #expect(machine.finish("/a", flightID: 1).isEmpty)
        #expect(machine.join("/a", waiter: "a3", id: 4, isCancelled: false) == .start(flightID: 3))
    }

    @Test("a caller that leaves is resumed alone while others wait; the last one cancels the call")
    func lastLeaverCancels() {
        var machine = joined(("/a", "a1"), ("/a", "a2"))
        #expect(machine.attach("call a", to: "/a", flightID: 1) == true)

        guard case .resume("a1") = machine.leave("/a", waiter: 1) else {
            Issue.record("the first caller to leave was not resumed alone")
            return
        }
        #expect(machine.flightCount == 1)
        guard case .resumeAndCancel("a2", "call a"?) = machine.leave("/a", waiter: 2) else {
            Issue.record("the last caller to leave did not cancel the call")
            return
        }
        #expect(machine.flightCount == 0)
        #expect(machine.waiterCount == 0)
    }

    @Test("leaving twice, or after the flight finished, does nothing")
    func leaveIsOnce() {
        var machine = joined(("/a", "a1"), ("/a", "a2"))
        guard case .resume = machine.leave("/a", waiter: 1) else {
            Issue.record("the caller was not resumed")
            return
        }
        guard case .none = machine.leave("/a", waiter: 1) else {
            Issue.record("a caller was resumed twice")
            return
        }
        #expect(machine.finish("/a", flightID: 1) == ["a2"])
        guard case .none = machine.leave("/a", waiter: 2) else {
            Issue.record("a caller resumed by the result was resumed again")
            return
        }
    }

    @Test("a flight abandoned before its call was attached hands the call back to be cancelled")
    func abandonedBeforeAttach() {
        var machine = joined(("/a", "a1"))
        guard case .resumeAndCancel("a1", nil) = machine.leave("/a", waiter: 1) else {
            Issue.record("the last caller to leave was not resumed")
            return
        }
        #expect(machine.attach("call a", to: "/a", flightID: 1) == false)
    }

    @Test("a finished or abandoned flight's late events do not touch a newer flight of the same key")
    func olderFlightIgnored() {
        var machine = joined(("/a", "a1"))
        _ = machine.leave("/a", waiter: 1)
        #expect(machine.join("/a", waiter: "a2", id: 2, isCancelled: false) == .start(flightID: 2))

        #expect(machine.attach("old call", to: "/a", flightID: 1) == false)
        #expect(machine.finish("/a", flightID: 1).isEmpty)
        #expect(machine.waiterCount == 1)
        #expect(machine.attach("new call", to: "/a", flightID: 2) == true)
        #expect(machine.finish("/a", flightID: 2) == ["a2"])
    }
}
