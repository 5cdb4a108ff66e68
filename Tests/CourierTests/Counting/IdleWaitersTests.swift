import Testing

@testable import Courier

@Suite("IdleWaiters")
struct IdleWaitersTests {
    private typealias Waiters = IdleWaiters<String>

    /// Begins a ticket for each of `names` and parks it in `waiters` while the owner is busy, expecting each to
    /// be suspended; returns the tickets in the order of `names`.
    private func park(
        _ names: String...,
        in waiters: inout Waiters,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Int] {
        names.map { name in
            let ticket = waiters.begin()
            #expect(waiters.park(ticket, name, isIdle: false) == .suspend, sourceLocation: sourceLocation)
            return ticket
        }
    }

    @Test("a waiter parks while the owner is busy and comes back, with every other, when it goes idle")
    func parkThenIdle() {
        var waiters = Waiters()
        let tickets = park("a", "b", in: &waiters)
        #expect(tickets[0] != tickets[1])
        #expect(waiters.count == 2)

        #expect(waiters.takeAll().sorted() == ["a", "b"])
        #expect(waiters.count == 0)
        #expect(waiters.takeAll().isEmpty)
    }

    @Test("a waiter that finds the owner idle resumes at once and is not kept")
    func alreadyIdle() {
        var waiters = Waiters()
        let ticket = waiters.begin()
        #expect(waiters.park(ticket, "a", isIdle: true) == .resume)
        #expect(waiters.count == 0)
        #expect(waiters.takeAll().isEmpty)
    }

    @Test("cancelling a parked waiter hands it back, and going idle later does not hand it back again")
    func cancelParked() {
        var waiters = Waiters()
        let cancelled = park("cancelled", "other", in: &waiters)[0]

        #expect(waiters.cancel(cancelled) == "cancelled")
        #expect(waiters.count == 1)
        #expect(waiters.takeAll() == ["other"])
    }

    @Test("a cancellation that comes before the waiter parks makes the parking resume at once")
    func cancelBeforeParking() {
        var waiters = Waiters()
        let ticket = waiters.begin()
        #expect(waiters.cancel(ticket) == nil)
        #expect(waiters.park(ticket, "a", isIdle: false) == .resume)
        #expect(waiters.count == 0)

        // The mark was used up: a later wait with another ticket parks as usual.
        let next = waiters.begin()
        #expect(waiters.park(next, "b", isIdle: false) == .suspend)
    }

    @Test("a cancellation after the wait was over is forgotten when the wait ends")
    func lateCancellation() {
        var waiters = Waiters()
        let ticket = park("a", in: &waiters)[0]
        #expect(waiters.takeAll() == ["a"])

        #expect(waiters.cancel(ticket) == nil)  // the waiter already resumed: nothing to hand back
        waiters.end(ticket)

        // Nothing is left behind: a fresh machine and this one answer the same from here on.
        var fresh = Waiters()
        _ = fresh.begin()
        let next = waiters.begin()
        let freshNext = fresh.begin()
        #expect(waiters.park(next, "b", isIdle: false) == fresh.park(freshNext, "b", isIdle: false))
        #expect(waiters.cancel(next) == "b")
    }

    @Test("a cancellation mark belongs to its own ticket only")
    func marksAreTicketed() {
        var waiters = Waiters()
        let cancelled = waiters.begin()
        let other = waiters.begin()
        _ = waiters.cancel(cancelled)
        #expect(waiters.park(other, "other", isIdle: false) == .suspend)
        #expect(waiters.park(cancelled, "cancelled", isIdle: false) == .resume)
        #expect(waiters.takeAll() == ["other"])
    }
}
