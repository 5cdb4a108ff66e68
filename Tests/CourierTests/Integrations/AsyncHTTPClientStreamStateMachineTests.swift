import Testing

@testable import Courier

@Suite("AsyncHTTPClientStreamStateMachine")
struct AsyncHTTPClientStreamStateMachineTests {
    /// The continuation, the request, the timer and the promises are names.
    private typealias Machine = AsyncHTTPClientStreamStateMachine<String, String, String, String>

    /// A machine whose request and timer are known, waiting for the head.
    private func waitingForHead() -> Machine {
        var machine = Machine()
        #expect(machine.waiting("caller") == true)
        #expect(machine.started("request") == nil)
        #expect(machine.timerSet("timer") == nil)
        return machine
    }

    /// A machine whose head was delivered.
    private func streaming() -> Machine {
        var machine = waitingForHead()
        let delivered = machine.receivedHead()
        #expect(delivered?.continuation == "caller")
        #expect(delivered?.timer == "timer")
        #expect(machine.isStreaming)
        return machine
    }

    /// Checks that every later event does nothing: the body is over, and each continuation and promise was
    /// handed out once.
    private func expectOver(_ machine: inout Machine, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!machine.isStreaming, sourceLocation: sourceLocation)
        #expect(machine.receivedHead() == nil, sourceLocation: sourceLocation)
        #expect(machine.cancelled() == nil, sourceLocation: sourceLocation)
        #expect(machine.deadlinePassed() == nil, sourceLocation: sourceLocation)
        #expect(machine.paused("late") == false, sourceLocation: sourceLocation)
        #expect(machine.demanded() == nil, sourceLocation: sourceLocation)
        #expect(machine.stopped() == nil, sourceLocation: sourceLocation)
        let failed = machine.failed()
        let finished = machine.finished()
        #expect(failed.isNone && finished.isNone, sourceLocation: sourceLocation)
    }

    // MARK: The head

    @Test("the head resumes the caller once, and the timer is cancelled")
    func headDelivered() {
        var machine = streaming()
        #expect(machine.receivedHead() == nil)
        #expect(machine.cancelled() == nil)
        #expect(machine.deadlinePassed() == nil)
    }

    @Test("a caller cancelled before it waits is told so, and nothing is sent")
    func cancelledBeforeWaiting() {
        var machine = Machine()
        #expect(machine.cancelled() == nil)
        #expect(machine.waiting("caller") == false)
    }

    @Test("a caller cancelled while waiting for the head is resumed, with the request and the timer to cancel")
    func cancelledWaitingForHead() {
        var machine = waitingForHead()
        let failure = machine.cancelled()
        #expect(failure?.continuation == "caller")
        #expect(failure?.task == "request")
        #expect(failure?.timer == "timer")
        expectOver(&machine)
    }

    @Test("a wait that ended before the request and the timer were known cancels them when they are")
    func endedBeforeStarted() {
        var machine = Machine()
        #expect(machine.waiting("caller") == true)
        let failure = machine.cancelled()
        #expect(failure?.continuation == "caller")
        #expect(failure?.task == nil)
        #expect(machine.started("request") == "request")
        #expect(machine.timerSet("timer") == "timer")
    }

    @Test("a head that came before the request was known leaves it running, and the timer is not kept")
    func headBeforeStarted() {
        var machine = Machine()
        #expect(machine.waiting("caller") == true)
        #expect(machine.receivedHead()?.continuation == "caller")
        #expect(machine.started("request") == nil)
        #expect(machine.timerSet("timer") == "timer")
    }

    @Test("the deadline ends the wait for the head and cancels the request; after the head it does nothing")
    func deadline() {
        var machine = waitingForHead()
        let failure = machine.deadlinePassed()
        #expect(failure?.continuation == "caller")
        #expect(failure?.task == "request")
        var streaming = streaming()
        #expect(streaming.deadlinePassed() == nil)
        #expect(streaming.isStreaming)
    }

    @Test("a request that fails before the head fails the caller and cancels the timer")
    func failedBeforeHead() {
        var machine = waitingForHead()
        let failed = machine.failed()
        #expect(failed.failedHead?.continuation == "caller")
        #expect(failed.failedHead?.timer == "timer")
        expectOver(&machine)
    }

    // MARK: The body

    @Test("a pause keeps the promise until the reader's demand, which hands it back to complete")
    func pauseThenDemand() {
        var machine = streaming()
        #expect(machine.paused("promise 1") == true)
        #expect(machine.demanded() == "promise 1")
        #expect(machine.paused("promise 2") == true)
        #expect(machine.demanded() == "promise 2")
    }

    @Test("a demand that comes before the pause is kept, so the body goes on at once, once")
    func demandBeforePause() {
        var machine = streaming()
        #expect(machine.demanded() == nil)
        #expect(machine.paused("promise 1") == false)
        #expect(machine.paused("promise 2") == true)
    }

    @Test("stopping the body hands back the promise AsyncHTTPClient waits on; later events do nothing")
    func stoppedWhilePaused() {
        var machine = streaming()
        #expect(machine.paused("promise") == true)
        #expect(machine.stopped() == "promise")
        expectOver(&machine)
    }

    @Test("a request that fails while paused finishes the body and hands back the promise")
    func failedWhilePaused() {
        var machine = streaming()
        #expect(machine.paused("promise") == true)
        let failed = machine.failed()
        #expect(failed.finishedBody == .some("promise"))
        expectOver(&machine)
    }

    @Test("a body that arrives whole finishes the pipe once")
    func finished() {
        var machine = streaming()
        let finished = machine.finished()
        #expect(finished.finishedBody == .some(nil))
        expectOver(&machine)
    }
}

extension AsyncHTTPClientStreamStateMachine.EndAction {
    /// Whether the action is to do nothing.
    fileprivate var isNone: Bool {
        if case .none = self { return true }
        return false
    }

    /// The caller and the timer, when the action is to fail the wait for the head.
    fileprivate var failedHead: (continuation: Continuation, timer: Timer?)? {
        guard case .failHead(let continuation, let timer) = self else { return nil }
        return (continuation, timer)
    }

    /// The promise to complete (itself optional), when the action is to finish the body.
    fileprivate var finishedBody: Promise?? {
        guard case .finishBody(let pendingDemand) = self else { return nil }
        return .some(pendingDemand)
    }
}
