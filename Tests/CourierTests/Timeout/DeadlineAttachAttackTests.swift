import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that enforces deadlines, on a manual clock, the way AsyncHTTPClientTransport does: a request for
/// `/body` reads a body that never ends through `TimeoutRunner.run(attachedTo:)` until it is cancelled; any
/// other request is answered at once, once `answer` opens.
private final class AttachingTransport: DeadlineEnforcingTransport {
    /// Whether each body read found its task attached to the deadline's work, in the order they started.
    let bodyReadsAttached = Locked<[Bool]>([])
    /// One arrival per body read that has started.
    let bodyReadsStarted = Arrivals()
    /// One arrival per body read that was cancelled.
    let bodyReadsCancelled = Arrivals()
    let answer: Gate

    init(answer: Gate = Gate(opened: true)) {
        self.answer = answer
    }

    func enforces(_ deadline: Deadline) -> Bool { true }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let ok = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        guard request.url?.path == "/body" else {
            await answer.wait()
            return (Data(), ok)
        }
        let deadline = try #require(Deadline.current)
        return try await TimeoutRunner.run(attachedTo: deadline, request: request) { _ in
            let work = Deadline.current?.work
            let attached = work.map { $0.owner?.holdsTask($0) ?? false } ?? false
            self.bodyReadsAttached.withLock { $0.append(attached) }
            self.bodyReadsStarted.arrive()
            try await withTaskCancellationHandler {
                try await Gate().waitUnlessCancelled()
            } onCancel: {
                self.bodyReadsCancelled.arrive()
            }
            throw CancellationError()
        }
    }
}

extension Gate {
    /// A gate that is open from the start.
    fileprivate convenience init(opened: Bool) {
        self.init()
        if opened { open() }
    }
}

private let bodyRequest = URLRequest(url: URL(string: "https://api.example.test/body")!)
private let answerRequest = URLRequest(url: URL(string: "https://api.example.test/answer")!)

/// Attacks on the work a timeout arms in its shared timer for the transport to attach a body read to
/// (`DeadlineTimer.attach/detach`, `TimeoutRunner.run(attachedTo:)`), on a manual clock.
@Suite("A body read attached to a timeout's shared timer, attacked", .timeLimit(.minutes(1)))
struct DeadlineAttachAttackTests {
    private let clock = ManualClock()
    private let timer: DeadlineTimer<ManualClock>

    init() {
        timer = DeadlineTimer(clock: clock)
    }

    /// Arms a work `after` from now in the suite's timer and attaches a task to it that waits until the driver
    /// cancels it: since the driver cancels due work in queue order, once this task is cancelled every work
    /// armed before it with a deadline no later has been dealt with.
    private func sentinel(after duration: Duration) async -> Task<Void, Never> {
        let work = DeadlineWork(owner: timer)
        timer.arm(work, at: clock.now.advanced(by: duration))
        let attached = Gate()
        let task = Task { [timer] in
            #expect(timer.attach(work))
            attached.open()
            try? await Gate().waitUnlessCancelled()
            await timer.detach(work)
            if !timer.tryEnd(work) { await timer.endAfterCancellation(work) }
        }
        await attached.wait()
        return task
    }

    @Test("a read spawned under the deadline, which outlives the timeout that set it, is still cut at the deadline")
    func spawnedReadOutlivingTheTimeout() async throws {
        // A log sink that ships its records over HTTP from a `Task { }`: the task inherits the call's deadline.
        let answer = Gate()
        let transport = AttachingTransport(answer: answer)
        let shipper = Client(transport: transport)
        let shipped = Locked<Task<(Data, HTTPURLResponse), any Error>?>(nil)
        let sink = LogSink { record in
            guard record.event == .started else { return }
            shipped.withLock { $0 = Task { try await shipper.send(bodyRequest) } }
        }
        let client = Client(
            transport: transport,
            middleware: [.timeout(.seconds(3), timer: timer), .logging(to: sink, startLevel: .info)]
        )
        let call = Task { try await client.send(answerRequest) }
        await transport.bodyReadsStarted.wait(for: 1)
        // The shipped read is the first to read a body under the call's deadline: it holds the call's work.
        #expect(transport.bodyReadsAttached.value == [true])
        answer.open()
        #expect(try await call.join().1.statusCode == 200)
        let read = try #require(shipped.value)
        // The call is over; the read it left behind is still under its deadline, 3 s from the start.
        let sentinel = await sentinel(after: .seconds(3))
        clock.advance(by: .seconds(3))
        await sentinel.join()
        guard transport.bodyReadsCancelled.count == 1 else {
            Issue.record("the deadline passed and the spawned read was not cancelled")
            read.cancel()
            _ = await outcome { try await read.join() }
            return
        }
        let error = try await #require(throws: CourierError.self) { try await read.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(3))
        #expect(timer.pendingCount == 0)
    }

    @Test("a task that detached is not cancelled when the deadline passes afterwards (a retry's earlier attempt)")
    func noCancelAfterDetach() async throws {
        let work = DeadlineWork(owner: timer)
        timer.arm(work, at: clock.now.advanced(by: .milliseconds(100)))
        let detached = Gate()
        let release = Gate()
        let attempt = Task { [timer] in
            let attached = timer.attach(work)
            await timer.detach(work)
            detached.open()
            // The task goes on after letting go: it must never see the deadline's cancellation.
            await release.wait()
            return attached && !Task.isCancelled
        }
        await detached.wait()
        let sentinel = await sentinel(after: .milliseconds(100))
        clock.advance(by: .milliseconds(100))
        await sentinel.join()
        #expect(work.didFire)
        release.open()
        #expect(await attempt.join())
        #expect(timer.tryEnd(work))
        #expect(timer.pendingCount == 0)
    }

    @Test(
        "attempts one after another under a whole-call deadline: each attaches; the one reading at the deadline is cut"
    )
    func sequentialAttempts() async throws {
        let transport = AttachingTransport()
        let client = Client(transport: transport, middleware: [.timeout(.seconds(3), timer: timer)])
        // Two quick calls through the same timeout first: each reads nothing, arms and ends its own work.
        for _ in 0..<2 { _ = try await client.send(answerRequest) }
        #expect(timer.pendingCount == 0)
        let call = Task { try await client.send(bodyRequest) }
        await transport.bodyReadsStarted.wait(for: 1)
        #expect(transport.bodyReadsAttached.value == [true])
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(2_999))
        #expect(transport.bodyReadsCancelled.count == 0)
        clock.advance(by: .milliseconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(3))
        #expect(error.middleware == "timeout")
        #expect(timer.pendingCount == 0)
    }

    @Test("two reads at once under one deadline: one attaches, the other keeps the race, and both are cut")
    func twoReadsAtOnce() async throws {
        // A deadline in real time would need the race's timer; the manual clock's 300 ms are 300 ms of real time
        // for the race (it sleeps on ContinuousClock for the time left), and the attached read waits for the
        // manual clock.
        let work = DeadlineWork(owner: timer)
        let fireAt = clock.now.advanced(by: .milliseconds(300))
        timer.arm(work, at: fireAt)
        let deadline = Deadline(at: fireAt, on: clock, timeout: .milliseconds(300), work: work)
        let transport = AttachingTransport()
        let reads = Task {
            await Deadline.$current.withValue(deadline) {
                await withTaskGroup(of: Result<Int, any Error>.self) { group in
                    for _ in 0..<2 {
                        group.addTask { await outcome { try await transport.send(bodyRequest).1.statusCode } }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
        }
        await transport.bodyReadsStarted.wait(for: 2)
        // The raced read is cut by its own timer, in real time; the attached one still holds the work, until the
        // manual clock reaches the deadline.
        await transport.bodyReadsCancelled.wait(for: 1)
        #expect(timer.holdsTask(work))
        #expect(transport.bodyReadsCancelled.count == 1)
        clock.advance(by: .milliseconds(300))
        let results = await reads.join()
        #expect(results.count == 2)
        for result in results {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .timedOut)
        }
        #expect(timer.tryEnd(work))
        #expect(timer.pendingCount == 0)
    }

    @Test(
        "a caller cancelled while its body read is attached gets CancellationError, at the deadline too",
        arguments: [false, true]
    )
    func callerCancelled(atDeadline: Bool) async throws {
        let transport = AttachingTransport()
        let client = Client(transport: transport, middleware: [.timeout(.seconds(3), timer: timer)])
        let call = Task { try await client.send(bodyRequest) }
        await transport.bodyReadsStarted.wait(for: 1)
        #expect(transport.bodyReadsAttached.value == [true])
        await clock.waitForSleepers(count: 1)
        call.cancel()
        if atDeadline { clock.advance(by: .seconds(3)) }
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(timer.pendingCount == 0)
    }

    @Test(
        "hedging below the timeout: both attempts read with the timeout's own child task bounding them, cut at the deadline"
    )
    func hedgedAttempts() async throws {
        let transport = AttachingTransport()
        // 300 s: a read that finds no work races the deadline's time left in real time (`run(until:)`), and the
        // test must end well before that race could cut a read (with 3 s, a loaded CI machine took longer than
        // 2.9 s between the second read's start and the clock's advance, and one read was cut early).
        let client = Client(
            transport: transport,
            middleware: [.timeout(.seconds(300), timer: timer), .hedging(after: .milliseconds(100), clock: clock)]
        )
        let call = Task { try await client.send(bodyRequest) }
        await transport.bodyReadsStarted.wait(for: 1)
        // The timer's driver and the hedging delay sleep on the manual clock.
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(100))
        await transport.bodyReadsStarted.wait(for: 2)
        // Hedging does not wait only within the deadline, so the timeout armed no work for a transport: neither
        // attempt attached, and the timeout's child task is what the driver cancels.
        #expect(transport.bodyReadsAttached.value == [false, false])
        clock.advance(by: .milliseconds(299_899))
        #expect(transport.bodyReadsCancelled.count == 0)
        clock.advance(by: .milliseconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(300))
        #expect(transport.bodyReadsCancelled.count == 2)
        #expect(timer.pendingCount == 0)
    }

    @Test(
        "nested timeouts on shared timers: the read attaches to the nearer deadline's work and is cut then",
        arguments: [true, false]
    )
    func nestedTimeouts(outerIsNearer: Bool) async throws {
        let outer = DeadlineTimer(clock: clock)
        let (outerDuration, innerDuration): (Duration, Duration) =
            outerIsNearer ? (.seconds(1), .seconds(3)) : (.seconds(3), .seconds(1))
        let transport = AttachingTransport()
        let client = Client(
            transport: transport,
            middleware: [.timeout(outerDuration, timer: outer), .timeout(innerDuration, timer: timer)]
        )
        let call = Task { try await client.send(bodyRequest) }
        await transport.bodyReadsStarted.wait(for: 1)
        #expect(transport.bodyReadsAttached.value == [true])
        // The outer timeout armed its work; the inner one armed its own only when its deadline is the nearer.
        #expect(outer.pendingCount == 1)
        #expect(timer.pendingCount == (outerIsNearer ? 0 : 1))
        await clock.waitForSleepers(count: outerIsNearer ? 1 : 2)
        clock.advance(by: .milliseconds(999))
        #expect(transport.bodyReadsCancelled.count == 0)
        clock.advance(by: .milliseconds(1))
        let error = try await #require(throws: CourierError.self) { try await call.join() }
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(1))
        #expect(transport.bodyReadsCancelled.count == 1)
        #expect(outer.pendingCount == 0)
        #expect(timer.pendingCount == 0)
    }

    @Test("seeded random orders of attach, detach, release and the deadline keep every invariant")
    func randomOrders() async throws {
        for seed in UInt64(0)..<300 {
            let failures = await AttachModel.run(seed: seed)
            #expect(failures.isEmpty, "seed \(seed): \(failures)")
            if !failures.isEmpty { return }
        }
    }
}

/// One read in ``AttachModel``: a task that attaches to the work, stays attached (cancelled or not) until told
/// to detach, and then stays alive until the run ends, recording every cancellation it sees and when.
private final class ModelReader: Sendable {
    enum Phase: Sendable { case starting, attached, detached }

    let attached = Locked<(ok: Bool, cancelledAtOnce: Bool)?>(nil)
    let attachDone = Gate()
    let detachNow = Gate()
    let detachDone = Gate()
    let finish = Gate()
    let phase = Locked(Phase.starting)
    /// The phase the reader was in at each cancellation.
    let cancellations = Locked<[Phase]>([])
    let task: Task<Void, Never>

    init(timer: DeadlineTimer<ManualClock>, work: DeadlineWork) {
        let attached = self.attached
        let attachDone = attachDone
        let detachNow = detachNow
        let detachDone = detachDone
        let finish = finish
        let phase = phase
        let cancellations = cancellations
        task = Task {
            await withTaskCancellationHandler {
                let ok = timer.attach(work)
                if ok { phase.withLock { $0 = .attached } }
                attached.withLock { $0 = (ok, Task.isCancelled) }
                attachDone.open()
                guard ok else { return }
                await detachNow.wait()
                await timer.detach(work)
                phase.withLock { $0 = .detached }
                detachDone.open()
                await finish.wait()
            } onCancel: {
                let now = phase.value
                cancellations.withLock { $0.append(now) }
            }
        }
    }
}

/// A random script over one work armed for a transport, on a manual clock: reads attach (at most one at a
/// time) and detach, the timeout releases the work, the deadline passes, in any order. Checks: attach is refused
/// exactly when another read holds the work or the timeout let it go; a read attached when the deadline passes
/// is cancelled then, one that attaches afterwards at once; no read is cancelled after it detached, or before
/// the deadline; the queue drains and the driver ends.
private enum AttachModel {
    static func run(seed: UInt64) async -> [String] {
        var failures: [String] = []
        var random = SplitMix64(seed: seed)
        let clock = ManualClock()
        let timer = DeadlineTimer(clock: clock)
        let work = DeadlineWork(owner: timer)
        let fireAt = clock.now.advanced(by: .seconds(1))
        timer.arm(work, at: fireAt)
        // Armed after the work with the same deadline: once it is cancelled, the driver has dealt with the work.
        let sentinel = DeadlineWork(owner: timer)
        timer.arm(sentinel, at: fireAt)
        let sentinelAttached = Gate()
        let sentinelTask = Task {
            _ = timer.attach(sentinel)
            sentinelAttached.open()
            try? await Gate().waitUnlessCancelled()
            await timer.detach(sentinel)
            timer.release(sentinel)
        }
        await sentinelAttached.wait()

        var readers: [ModelReader] = []
        var holder: ModelReader?
        var released = false
        var fired = false
        var detachedBeforeFire: [ModelReader] = []
        var step = 0
        func fail(_ message: String) { failures.append("step \(step): \(message)") }

        for index in 0..<10 {
            step = index
            switch random.next() % 4 {
            case 0:
                let reader = ModelReader(timer: timer, work: work)
                readers.append(reader)
                await reader.attachDone.wait()
                guard let (ok, cancelledAtOnce) = reader.attached.value else { continue }
                // Once the deadline has passed, a read that attaches cancels itself and the timer holds nothing.
                let expected = !released && (fired || holder == nil)
                if ok != expected { fail("attach returned \(ok), expected \(expected)") }
                if ok && cancelledAtOnce != fired {
                    fail("attached after the deadline: \(fired), cancelled: \(cancelledAtOnce)")
                }
                if ok && !fired { holder = reader }
            case 1:
                guard let reader = holder else { continue }
                reader.detachNow.open()
                await reader.detachDone.wait()
                if !fired { detachedBeforeFire.append(reader) }
                holder = nil
            case 2:
                guard !released else { continue }
                timer.release(work)
                released = true
            default:
                guard !fired else { continue }
                clock.advance(to: fireAt)
                await sentinelTask.join()
                fired = true
                if let holder, holder.cancellations.value.isEmpty {
                    fail("the read attached at the deadline was not cancelled")
                }
            }
            if !fired, readers.contains(where: { !$0.cancellations.value.isEmpty }) {
                fail("a read was cancelled before the deadline")
            }
        }
        // The end of the run: the holder detaches, the timeout lets go, the deadline passes.
        if let holder {
            holder.detachNow.open()
            await holder.detachDone.wait()
            if !fired { detachedBeforeFire.append(holder) }
        }
        if !released { timer.release(work) }
        if !fired {
            clock.advance(to: fireAt)
            await sentinelTask.join()
        }
        for reader in readers {
            reader.detachNow.open()
            reader.finish.open()
            await reader.task.join()
            if reader.cancellations.value.contains(.detached) { fail("a read was cancelled after it detached") }
        }
        for reader in detachedBeforeFire where !reader.cancellations.value.isEmpty {
            fail("a read that detached before the deadline was cancelled: \(reader.cancellations.value)")
        }
        if timer.pendingCount != 0 { fail("\(timer.pendingCount) deadlines left in the queue") }
        do {
            try await waitUntil { !timer.driverIsRunning }
        } catch {
            fail("the driver did not end")
        }
        return failures
    }
}
