import CourierTesting
import Testing

@testable import Courier

@Suite("RateLimitStateMachine")
struct RateLimitStateMachineTests {
    typealias Machine = RateLimitStateMachine<Int>

    static func settings(
        queue: Int? = nil,
        maximumWait: Duration? = nil,
        clientLimit: Int? = nil,
        clientWindow: Duration? = nil
    ) -> Machine.Settings {
        Machine.Settings(
            maximumQueueLength: queue,
            maximumWait: maximumWait,
            clientLimit: clientLimit,
            clientWindow: clientWindow,
            fallbackDelay: .seconds(1)
        )
    }

    /// What a server with `limit` per `window` says with `remaining` left and the window ending in `reset`.
    static func headers(
        limit: Int = 50,
        remaining: Int,
        reset: Duration,
        window: Duration = .seconds(60)
    )
        -> RateLimitObservation
    {
        RateLimitObservation(limit: limit, remaining: remaining, reset: reset, window: window)
    }

    /// A machine whose probe has come back with `headers`.
    static func probed(_ headers: RateLimitObservation, settings: Machine.Settings = settings()) throws -> Machine {
        var machine = Machine(settings: settings)
        let probe = try #require(arrive(&machine, 0))
        _ = machine.complete(probe, observation: headers, now: .zero)
        return machine
    }

    /// Sends or enqueues request `waiter`; returns the ticket when it was let through at once.
    @discardableResult
    static func arrive(
        _ machine: inout Machine,
        _ waiter: Int,
        now: Duration = .zero,
        deadline: Duration? = nil
    ) -> Machine.Ticket? {
        switch machine.acquire(now: now, deadline: deadline) {
        case .send(let ticket): return ticket
        case .reject(let rejection): Issue.record("rejected: \(rejection)")
        case .suspend(let id):
            if case .send(let ticket) = machine.enqueue(
                waiter,
                id: id,
                now: now,
                deadline: deadline,
                isCancelled: false
            ) {
                return ticket
            }
        }
        return nil
    }

    @Test("nothing known: one probe goes, the rest wait for its response")
    func probe() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        #expect(probe.isProbe)
        for waiter in 1...5 { #expect(Self.arrive(&machine, waiter) == nil) }
        #expect(machine.waiterCount == 5)

        let output = machine.complete(probe, observation: Self.headers(remaining: 3, reset: .seconds(60)), now: .zero)
        #expect(output.sends.map(\.waiter) == [1, 2, 3])
        #expect(machine.remaining == 0)
        #expect(machine.inFlight == 3)
        #expect(output.scheduleTick == .seconds(60))
        #expect(output.updated == .init(limit: 50, remaining: 3, resetAt: .seconds(60), window: .seconds(60)))
    }

    @Test("a probe answered without rate-limit fields makes the partition unlimited")
    func unlimited() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        for waiter in 1...3 { Self.arrive(&machine, waiter) }
        let output = machine.complete(probe, observation: RateLimitObservation(), now: .zero)
        #expect(output.sends.count == 3)
        #expect(machine.isUnlimited)
        #expect(Self.arrive(&machine, 4) != nil)
    }

    @Test("a probe that fails without a response lets the next waiter probe")
    func failedProbe() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        for waiter in 1...2 { Self.arrive(&machine, waiter) }
        let output = machine.complete(probe, observation: nil, now: .zero)
        #expect(output.sends.map(\.waiter) == [1])
        #expect(output.sends.first?.ticket.isProbe == true)
        #expect(machine.waiterCount == 1)
    }

    @Test("in-flight requests count against remaining before their responses come back")
    func reservations() throws {
        var machine = try Self.probed(Self.headers(remaining: 4, reset: .seconds(60)))
        let tickets = (1...4).compactMap { Self.arrive(&machine, $0) }
        #expect(tickets.count == 4)
        #expect(Self.arrive(&machine, 5) == nil)
        // A response saying 3 are left while 3 others are still in flight: nothing more may go.
        _ = machine.complete(tickets[0], observation: Self.headers(remaining: 3, reset: .seconds(60)), now: .zero)
        #expect(machine.remaining == 0)
    }

    @Test("the server's lower count wins within a window; a higher one does not raise it")
    func reconcileDown() throws {
        var machine = try Self.probed(Self.headers(remaining: 10, reset: .seconds(60)))
        let a = try #require(Self.arrive(&machine, 1))
        let b = try #require(Self.arrive(&machine, 2))
        #expect(machine.remaining == 8)
        // Another client used the quota: the server says 2 left, one of ours is still in flight.
        _ = machine.complete(a, observation: Self.headers(remaining: 2, reset: .seconds(59.5)), now: .seconds(1))
        #expect(machine.remaining == 1)
        // A reordered response with an older, higher count does not give slots back.
        _ = machine.complete(b, observation: Self.headers(remaining: 9, reset: .seconds(59)), now: .seconds(1))
        #expect(machine.remaining == 1)
    }

    @Test("responses that arrive out of order do not count twice the requests the server has counted already")
    func outOfOrder() throws {
        var machine = try Self.probed(Self.headers(limit: 10, remaining: 9, reset: .seconds(60)))
        let tickets = (1...3).compactMap { Self.arrive(&machine, $0) }
        #expect(machine.remaining == 6)
        // The server counted all three (9 → 6); the last one's answer comes first, two are still in flight.
        _ = machine.complete(
            tickets[2],
            observation: Self.headers(limit: 10, remaining: 6, reset: .seconds(60)),
            now: .zero
        )
        #expect(machine.remaining == 6)
        _ = machine.complete(
            tickets[0],
            observation: Self.headers(limit: 10, remaining: 8, reset: .seconds(60)),
            now: .zero
        )
        #expect(machine.remaining == 6)
    }

    @Test("a response showing a later window starts it at once, before the predicted reset")
    func laterWindowFromResponse() throws {
        var machine = try Self.probed(Self.headers(limit: 5, remaining: 4, reset: .seconds(10)))
        let sent = (1...4).compactMap { Self.arrive(&machine, $0) }
        Self.arrive(&machine, 5)
        // The server's window turned over early (its clock runs ahead): the answer shows a reset 60 s on.
        let output = machine.complete(
            sent[0],
            observation: Self.headers(limit: 5, remaining: 4, reset: .seconds(60)),
            now: .seconds(1)
        )
        #expect(machine.resetAt == .seconds(61))
        // 4 left by the server, 3 of ours still in flight and maybe not counted yet: 1 may go, to waiter 5.
        #expect(output.sends.map(\.waiter) == [5])
    }

    @Test("at the reset the quota comes back, waiters go in FIFO order, and the next reset is predicted")
    func newWindow() throws {
        var machine = try Self.probed(Self.headers(limit: 2, remaining: 0, reset: .seconds(10)))
        for waiter in 1...5 { Self.arrive(&machine, waiter) }
        #expect(machine.tick(now: .seconds(9)).sends.isEmpty)
        let output = machine.tick(now: .seconds(10))
        #expect(output.sends.map(\.waiter) == [1, 2])
        #expect(machine.resetAt == .seconds(70))
        #expect(output.scheduleTick == .seconds(70))
        for (_, ticket, _) in output.sends {
            _ = machine.complete(
                ticket,
                observation: Self.headers(limit: 2, remaining: 0, reset: .seconds(59)),
                now: .seconds(11)
            )
        }
        #expect(machine.tick(now: .seconds(70)).sends.map(\.waiter) == [3, 4])
    }

    @Test("waiters go in arrival order: a later arrival never takes a slot before an earlier one")
    func fifo() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        for waiter in 1...2 { Self.arrive(&machine, waiter) }
        let output = machine.complete(probe, observation: Self.headers(remaining: 1, reset: .seconds(5)), now: .zero)
        #expect(output.sends.map(\.waiter) == [1])
        #expect(machine.waiterCount == 1)
        #expect(machine.tick(now: .seconds(5)).sends.map(\.waiter) == [2])
    }

    @Test("requests in flight at the reset count in the new window until they show they were counted in the old")
    func carriedOver() throws {
        var machine = try Self.probed(Self.headers(limit: 3, remaining: 3, reset: .seconds(10)))
        let late = try #require(Self.arrive(&machine, 1, now: .seconds(9)))
        _ = Self.arrive(&machine, 2, now: .seconds(9))
        _ = machine.tick(now: .seconds(10))
        #expect(machine.remaining == 1)
        #expect(machine.carried == 2)
        // The late one comes back counted in the old window (reset at 10): its slot is free again.
        _ = machine.complete(
            late,
            observation: Self.headers(limit: 3, remaining: 1, reset: .seconds(0.5)),
            now: .seconds(10.5)
        )
        #expect(machine.remaining == 2)
    }

    @Test("a 429 with Retry-After holds everything until then, and then probes when no limit is known")
    func throttled() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1)
        let refusal = RateLimitObservation(retryAfter: .seconds(30), isThrottled: true)
        let output = machine.complete(probe, observation: refusal, now: .zero)
        #expect(output.sends.isEmpty)
        #expect(output.scheduleTick == .seconds(30))
        let reopened = machine.tick(now: .seconds(30))
        #expect(reopened.sends.map(\.waiter) == [1])
        #expect(reopened.sends.first?.ticket.isProbe == true)
    }

    @Test("a 429 without any timing holds for the fallback delay")
    func throttledWithoutTiming() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1)
        let output = machine.complete(probe, observation: RateLimitObservation(isThrottled: true), now: .zero)
        #expect(output.scheduleTick == .seconds(1))
    }

    @Test("nothing left and no reset: hold for the fallback delay once nothing is in flight")
    func noReset() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1)
        let output = machine.complete(probe, observation: RateLimitObservation(limit: 5, remaining: 0), now: .zero)
        #expect(output.scheduleTick == .seconds(1))
        #expect(machine.tick(now: .seconds(1)).sends.map(\.waiter) == [1])
    }

    @Test(
        "a quota of 0 holds requests until its reset, then one probes: the server's next answer decides",
        arguments: [nil, Duration.seconds(60)]
    )
    func zeroQuota(window: Duration?) throws {
        var machine = Machine(settings: Self.settings(maximumWait: .seconds(60)))
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1)
        Self.arrive(&machine, 2)
        let quota = RateLimitObservation(limit: 0, remaining: 0, reset: .seconds(1), window: window)
        let answered = machine.complete(probe, observation: quota, now: .zero)
        #expect(answered.sends.isEmpty)
        #expect(answered.scheduleTick == .seconds(1))
        // At the reset, the head of the queue probes; the other waits for its answer.
        let reset = machine.tick(now: .seconds(1))
        #expect(reset.sends.map(\.waiter) == [1])
        #expect(reset.sends.first?.ticket.isProbe == true)
        #expect(reset.rejections.isEmpty)
        // The server says 0 again: hold again until its reset, then probe again.
        let probed = try #require(reset.sends.first)
        let again = machine.complete(probed.ticket, observation: quota, now: .seconds(1))
        #expect(again.sends.isEmpty)
        #expect(again.scheduleTick == .seconds(2))
        let later = machine.tick(now: .seconds(2))
        #expect(later.sends.map(\.waiter) == [2])
        // This time the server lets it through: the quota it reports applies.
        let second = try #require(later.sends.first)
        let opened = machine.complete(
            second.ticket,
            observation: Self.headers(limit: 10, remaining: 9, reset: .seconds(60)),
            now: .seconds(2)
        )
        #expect(opened.updated?.remaining == 9)
        #expect(Self.arrive(&machine, 3, now: .seconds(2)) != nil)
    }

    @Test(
        "a waiter that arrived before the head (it waited elsewhere first) gets a tick at the end of its own maximum wait"
    )
    func earlierArrivalBehindTheHead() throws {
        // Behind a probe, when no slot's time is known, ticks refuse the waiters whose maximum wait has passed. A
        // request that waited for the fleet's window first comes back with its first arrival (`since`), earlier than
        // the head's: its maximum wait ends first, and the tick must come then (it came at the head's, 0.4 s late).
        var machine = Machine(settings: Self.settings(maximumWait: .seconds(1)))
        let probe = try #require(Self.arrive(&machine, 0))
        #expect(probe.isProbe)
        guard case .suspend(let head) = machine.acquire(now: .milliseconds(500), deadline: nil) else {
            Issue.record("the head was not told to wait")
            return
        }
        let headWaits = machine.enqueue(1, id: head, now: .milliseconds(500), deadline: nil, isCancelled: false)
        #expect(headWaits == .waiting(scheduleTick: .milliseconds(1_500)))
        let second = machine.acquire(now: .milliseconds(600), since: .milliseconds(100), deadline: nil)
        guard case .suspend(let late) = second else {
            Issue.record("the second waiter was not told to wait")
            return
        }
        let lateWaits = machine.enqueue(
            2,
            id: late,
            now: .milliseconds(600),
            since: .milliseconds(100),
            deadline: nil,
            isCancelled: false
        )
        #expect(lateWaits == .waiting(scheduleTick: .milliseconds(1_100)))
        let tick = machine.tick(now: .milliseconds(1_100))
        #expect(tick.rejections.map(\.0) == [2])
        #expect(machine.waiterCount == 1)
        #expect(tick.scheduleTick == .milliseconds(1_500))
    }

    @Test("a quota of 0 with nothing left and no reset holds for the fallback delay, then probes")
    func zeroQuotaNoReset() throws {
        var machine = Machine(settings: Self.settings(maximumWait: .seconds(60)))
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1)
        let output = machine.complete(probe, observation: RateLimitObservation(limit: 0, remaining: 0), now: .zero)
        #expect(output.scheduleTick == .seconds(1))
        let tick = machine.tick(now: .seconds(1))
        #expect(tick.sends.map(\.waiter) == [1])
        #expect(tick.sends.first?.ticket.isProbe == true)
    }

    @Test("a reset in the past opens the window at once")
    func pastReset() throws {
        var machine = try Self.probed(Self.headers(limit: 0, remaining: 0, reset: .zero))
        let next = try #require(Self.arrive(&machine, 1, now: .milliseconds(1)))
        #expect(next.isProbe)
    }

    @Test("a reset beyond the maximum wait is refused at once, saying when it opens")
    func farReset() throws {
        let far = Duration.seconds(1 << 40)
        var machine = try Self.probed(
            Self.headers(limit: 10, remaining: 0, reset: far),
            settings: Self.settings(maximumWait: .seconds(60))
        )
        #expect(
            machine.acquire(now: .zero, deadline: nil) == .reject(.waitTooLong(opensIn: far, maximum: .seconds(60)))
        )
    }

    @Test("a client-side limit applies from the first request, its window starting then, until the server speaks")
    func clientLimit() throws {
        var machine = Machine(settings: Self.settings(clientLimit: 2, clientWindow: .seconds(10)))
        let first = try #require(Self.arrive(&machine, 0, now: .seconds(3)))
        #expect(!first.isProbe)
        #expect(Self.arrive(&machine, 1, now: .seconds(3)) != nil)
        #expect(Self.arrive(&machine, 2, now: .seconds(3)) == nil)
        #expect(machine.resetAt == .seconds(13))
        #expect(machine.tick(now: .seconds(13)).sends.map(\.waiter) == [2])
        // The server's numbers replace the client's.
        _ = machine.complete(
            first,
            observation: Self.headers(limit: 100, remaining: 90, reset: .seconds(60)),
            now: .seconds(13)
        )
        #expect(machine.limit == 100)
        #expect(machine.remaining == 88)
    }

    @Test(
        "a 429 or 503 without numbers under a client-side limit holds for its Retry-After (or the fallback), and keeps the limit",
        arguments: [Duration.seconds(2), nil]
    )
    func throttledKeepsClientLimit(retryAfter: Duration?) throws {
        var machine = Machine(settings: Self.settings(clientLimit: 3, clientWindow: .seconds(60)))
        let first = try #require(Self.arrive(&machine, 0, now: .zero))
        let second = try #require(Self.arrive(&machine, 1, now: .zero))
        let refused = RateLimitObservation(retryAfter: retryAfter, isThrottled: true)
        _ = machine.complete(first, observation: refused, now: .seconds(1))
        let heldUntil = Duration.seconds(1) + (retryAfter ?? .seconds(1))

        // Held until the server's delay, not to the end of the client's window.
        #expect(Self.arrive(&machine, 2, now: .seconds(1)) == nil)
        #expect(machine.tick(now: heldUntil - .milliseconds(1)).sends.isEmpty)
        let resumed = machine.tick(now: heldUntil)
        #expect(resumed.sends.map(\.waiter) == [2])
        // The client's limit and window still count: the third slot of three was the last until t=60.
        #expect(machine.limit == 3)
        #expect(Self.arrive(&machine, 3, now: heldUntil) == nil)
        #expect(machine.resetAt == .seconds(60))
        // A response without fields afterwards does not end the pacing.
        _ = machine.complete(second, observation: RateLimitObservation(), now: heldUntil)
        #expect(!machine.isUnlimited)
        #expect(machine.tick(now: .seconds(60)).sends.map(\.waiter) == [3])
        #expect(machine.remaining == 2)
    }

    @Test("a hold under a client-side limit is what goes to the store, and a replica that starts from it holds too")
    func holdIsShared() throws {
        let settings = Self.settings(clientLimit: 3, clientWindow: .seconds(60))
        var machine = Machine(settings: settings)
        let first = try #require(Self.arrive(&machine, 0, now: .zero))
        let refused = RateLimitObservation(retryAfter: .seconds(120), isThrottled: true)
        let output = machine.complete(first, observation: refused, now: .seconds(1))
        let held = Machine.Quota(limit: nil, remaining: 0, resetAt: .seconds(121), window: nil)
        #expect(output.updated == held)
        #expect(machine.quota == held)

        // Another replica's machine, starting from the stored hold: it holds, and keeps its own client limit.
        var other = Machine(settings: settings)
        other.seed(held, now: .seconds(2))
        #expect(Self.arrive(&other, 1, now: .seconds(2)) == nil)
        #expect(other.tick(now: .seconds(121)).sends.map(\.waiter) == [1])
        #expect(other.limit == 3 && !other.isFromServer)
    }

    @Test("a partition that told a request to suspend holds something until that request enqueues")
    func announcedSuspendHoldsThePartition() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        guard case .suspend(let id) = machine.acquire(now: .zero, deadline: nil) else {
            Issue.record("expected a suspension behind the probe")
            return
        }
        _ = machine.complete(probe, observation: nil, now: .zero)
        #expect(!machine.holdsNothing(now: .zero))
        #expect(machine.enqueue(1, id: id, now: .zero, deadline: nil, isCancelled: true) == .cancelled)
        #expect(machine.holdsNothing(now: .zero))
    }

    @Test("while held, a waiter's slot is estimated from the client window that starts when the hold ends")
    func openingDuringHold() throws {
        let settings = Machine.Settings(
            maximumQueueLength: nil,
            maximumWait: .seconds(150),
            clientLimit: 3,
            clientWindow: .seconds(60),
            fallbackDelay: .seconds(1)
        )
        var machine = Machine(settings: settings)
        let first = try #require(Self.arrive(&machine, 0, now: .zero))
        _ = try #require(Self.arrive(&machine, 1, now: .zero))
        _ = try #require(Self.arrive(&machine, 2, now: .zero))
        let refused = RateLimitObservation(retryAfter: .seconds(120), isThrottled: true)
        _ = machine.complete(first, observation: refused, now: .seconds(1))
        // The client window ends at 60, during the hold; at 121 three go, and the fourth waits for 181.
        for waiter in 3...5 { #expect(Self.arrive(&machine, waiter, now: .seconds(2)) == nil) }
        #expect(
            machine.acquire(now: .seconds(2), deadline: nil)
                == .reject(.waitTooLong(opensIn: .seconds(179), maximum: .seconds(150)))
        )
    }

    @Test(
        "a ticket not used yet outlives its client window when that ends; its slot goes to no one; a server's window keeps it"
    )
    func outlivedClientWindow() throws {
        let settings = Self.settings(clientLimit: 1, clientWindow: .seconds(1))
        var machine = Machine(settings: settings)
        let stale = try #require(Self.arrive(&machine, 0))
        let beforeTheEnd = machine.outlivedClientWindow(stale, now: .milliseconds(999))
        let atTheEnd = machine.outlivedClientWindow(stale, now: .seconds(1))
        #expect(!beforeTheEnd && atTheEnd)
        // The next window's slot is taken; the ended window's slot, given back, goes to no one.
        let current = try #require(Self.arrive(&machine, 1, now: .milliseconds(1_200)))
        _ = machine.returnUnused(stale, now: .milliseconds(1_500))
        #expect(machine.remaining == 0 && machine.inFlight == 1)
        let currentOutlived = machine.outlivedClientWindow(current, now: .milliseconds(1_500))
        #expect(!currentOutlived)
        #expect(Self.arrive(&machine, 2, now: .milliseconds(1_500)) == nil)
        // With the server's numbers, a new window counts the requests carried into it: nothing outlived.
        var server = try Self.probed(Self.headers(remaining: 5, reset: .seconds(10)), settings: settings)
        let carried = try #require(Self.arrive(&server, 3))
        let carriedOutlived = server.outlivedClientWindow(carried, now: .seconds(11))
        #expect(!carriedOutlived)
        #expect(server.remaining == 49)
    }

    @Test("queue full, wait too long and past the deadline are refused at once when the slot time is known")
    func refusals() throws {
        var machine = try Self.probed(
            Self.headers(limit: 1, remaining: 0, reset: .seconds(60)),
            settings: Self.settings(queue: 2, maximumWait: .seconds(100))
        )
        // The next slot opens at 60: a deadline at 30 cannot be met.
        #expect(machine.acquire(now: .zero, deadline: .seconds(30)) == .reject(.pastDeadline(opensIn: .seconds(60))))
        #expect(machine.acquire(now: .zero, deadline: .seconds(60)) == .reject(.pastDeadline(opensIn: .seconds(60))))
        Self.arrive(&machine, 1)
        // Position 1 opens a window later, at 120: beyond the maximum wait of 100.
        #expect(
            machine.acquire(now: .zero, deadline: nil)
                == .reject(.waitTooLong(opensIn: .seconds(120), maximum: .seconds(100)))
        )
        var full = Machine(settings: Self.settings(queue: 1))
        _ = Self.arrive(&full, 0)
        Self.arrive(&full, 1)
        #expect(full.acquire(now: .zero, deadline: nil) == .reject(.queueFull(maximum: 1)))
    }

    @Test("a waiter whose slot time becomes known too late for its deadline is failed then, not at the deadline")
    func lateKnowledge() throws {
        var machine = Machine(settings: Self.settings())
        let probe = try #require(Self.arrive(&machine, 0))
        Self.arrive(&machine, 1, deadline: .seconds(20))
        Self.arrive(&machine, 2, deadline: .seconds(90))
        let output = machine.complete(
            probe,
            observation: Self.headers(limit: 5, remaining: 0, reset: .seconds(30)),
            now: .seconds(1)
        )
        #expect(output.rejections.map(\.waiter) == [1])
        #expect(output.rejections.first?.rejection == .pastDeadline(opensIn: .seconds(30)))
        #expect(machine.waiterCount == 1)
    }

    @Test("waiters with an unknown slot time are woken at their deadline and at the maximum wait")
    func timedTicks() throws {
        var machine = Machine(settings: Self.settings(maximumWait: .seconds(50)))
        _ = try #require(Self.arrive(&machine, 0))
        switch machine.acquire(now: .zero, deadline: .seconds(20)) {
        case .suspend(let id):
            #expect(
                machine.enqueue(1, id: id, now: .zero, deadline: .seconds(20), isCancelled: false)
                    == .waiting(scheduleTick: .seconds(20))
            )
        default: Issue.record("expected to wait")
        }
        Self.arrive(&machine, 2)
        let atDeadline = machine.tick(now: .seconds(20))
        #expect(atDeadline.rejections.map(\.waiter) == [1])
        #expect(atDeadline.scheduleTick == .seconds(50))
        let atMaximum = machine.tick(now: .seconds(50))
        #expect(atMaximum.rejections.map(\.waiter) == [2])
        #expect(atMaximum.rejections.first?.rejection == .waitTooLong(opensIn: nil, maximum: .seconds(50)))
    }

    @Test("a cancelled waiter leaves the queue; a ticket returned unused frees its slot")
    func cancellation() throws {
        var machine = try Self.probed(Self.headers(remaining: 1, reset: .seconds(60)))
        let ticket = try #require(Self.arrive(&machine, 1))
        guard case .suspend(let id) = machine.acquire(now: .zero, deadline: nil) else {
            Issue.record("expected to wait")
            return
        }
        #expect(
            machine.enqueue(2, id: id, now: .zero, deadline: nil, isCancelled: false)
                == .waiting(scheduleTick: .seconds(60))
        )
        #expect(machine.cancel(id: id) == 2)
        #expect(machine.cancel(id: id) == nil)
        #expect(machine.waiterCount == 0)
        _ = machine.returnUnused(ticket, now: .zero)
        #expect(machine.remaining == 1)
        #expect(machine.inFlight == 0)
    }

    @Test("a request cancelled before it enqueues is told so and does not wait")
    func cancelledBeforeEnqueue() throws {
        var machine = Machine(settings: Self.settings())
        _ = try #require(Self.arrive(&machine, 0))
        guard case .suspend(let id) = machine.acquire(now: .zero, deadline: nil) else {
            Issue.record("expected to wait")
            return
        }
        #expect(machine.enqueue(1, id: id, now: .zero, deadline: nil, isCancelled: true) == .cancelled)
        #expect(machine.waiterCount == 0)
    }

    @Test("a stored quota seeds a partition until its reset; an expired one is ignored")
    func seed() throws {
        var machine = Machine(settings: Self.settings())
        machine.seed(.init(limit: 10, remaining: 0, resetAt: .seconds(30), window: .seconds(60)), now: .zero)
        #expect(machine.acquire(now: .zero, deadline: nil) == .suspend(id: 1))
        var expired = Machine(settings: Self.settings())
        expired.seed(.init(limit: 10, remaining: 0, resetAt: .seconds(30), window: nil), now: .seconds(31))
        #expect(expired.remaining == nil)
    }

    /// Everything the machine shows of itself.
    private struct Snapshot: Equatable {
        var limit: Int?
        var window: Duration?
        var remaining: Int?
        var resetAt: Duration?
        var isUnlimited: Bool
        var isFromServer: Bool
        var epoch: Int
        var inFlight: Int
        var isProbeInFlight: Bool
        var carried: Int
        var sentInWindow: Int
        var waiterCount: Int

        init(_ machine: Machine) {
            (limit, window, remaining, resetAt) = (machine.limit, machine.window, machine.remaining, machine.resetAt)
            (isUnlimited, isFromServer, epoch) = (machine.isUnlimited, machine.isFromServer, machine.epoch)
            (inFlight, isProbeInFlight, carried) = (machine.inFlight, machine.isProbeInFlight, machine.carried)
            (sentInWindow, waiterCount) = (machine.sentInWindow, machine.waiterCount)
        }
    }

    @Test(
        "acquireUntimed and completeUntimed change the machine as acquire and complete would at any time, or not at all",
        arguments: 0..<24
    )
    func untimedFastPaths(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 29, 3)
        var machine = Machine(
            settings: Self.settings(
                maximumWait: .seconds(30),
                clientLimit: seed % 4 == 0 ? 3 : nil,
                clientWindow: .seconds(5)
            )
        )
        var now = Duration.zero
        var inFlight: [Machine.Ticket] = []
        var waiter = 0
        var (fastAcquires, fastCompletes, slowCompletes) = (0, 0, 0)
        func carryOut(_ output: Machine.Output) {
            inFlight += output.sends.map(\.ticket)
        }
        for _ in 0..<400 {
            now += .milliseconds(Int(random.next() % 3_000))
            if inFlight.isEmpty || random.next() % 2 == 0 {
                var fast = machine
                var timed = machine
                let action = timed.acquire(now: now, deadline: nil)
                if let ticket = fast.acquireUntimed() {
                    fastAcquires += 1
                    #expect(action == .send(ticket), "seed \(seed)")
                    #expect(Snapshot(fast) == Snapshot(timed), "seed \(seed)")
                } else {
                    #expect(Snapshot(fast) == Snapshot(machine), "seed \(seed)")
                }
                machine = timed
                switch action {
                case .send(let ticket): inFlight.append(ticket)
                case .reject: break
                case .suspend(let id):
                    waiter += 1
                    if case .send(let ticket) = machine.enqueue(
                        waiter,
                        id: id,
                        now: now,
                        deadline: nil,
                        isCancelled: false
                    ) {
                        inFlight.append(ticket)
                    }
                }
            } else {
                let ticket = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
                // Mostly a server that says nothing; sometimes a quota (without a limit, so that the partition
                // probes again at its reset and can turn unlimited again), a limit alone, a 429, or no response.
                let observation: RateLimitObservation? =
                    switch random.next() % 16 {
                    case 0: nil
                    case 1: RateLimitObservation(limit: 10)
                    case 2: RateLimitObservation(remaining: Int(random.next() % 3), reset: .seconds(4))
                    case 3: RateLimitObservation(retryAfter: .seconds(2), isThrottled: true)
                    default: RateLimitObservation()
                    }
                var fast = machine
                var timed = machine
                let output = timed.complete(ticket, observation: observation, now: now)
                if fast.completeUntimed(ticket, observation: observation) {
                    fastCompletes += 1
                    #expect(output.sends.isEmpty && output.rejections.isEmpty, "seed \(seed)")
                    #expect(output.scheduleTick == nil && output.updated == nil, "seed \(seed)")
                    #expect(Snapshot(fast) == Snapshot(timed), "seed \(seed)")
                } else {
                    slowCompletes += 1
                    #expect(Snapshot(fast) == Snapshot(machine), "seed \(seed)")
                }
                machine = timed
                carryOut(output)
            }
            if random.next() % 8 == 0 { carryOut(machine.tick(now: now)) }
        }
        // Both paths were taken.
        #expect(fastAcquires > 0, "seed \(seed)")
        #expect(fastCompletes > 0, "seed \(seed)")
        #expect(slowCompletes > 10, "seed \(seed)")
    }
}
