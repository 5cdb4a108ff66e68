import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("URLSessionStreamStateMachine")
struct URLSessionStreamStateMachineTests {
    /// The task and the continuation are names.
    private typealias Machine = URLSessionStreamStateMachine<String, String>

    private struct Failure: Error {}

    private static let head = HTTPURLResponse(
        url: URL(string: "https://api.example.com/export")!,
        statusCode: 200,
        httpVersion: "HTTP/1.1",
        headerFields: nil
    )!

    /// A machine whose task runs and whose head has arrived.
    private func streaming(canSuspend: Bool, readAheadLimit: Int = 100) -> Machine {
        var machine = Machine(canSuspend: canSuspend, readAheadLimit: readAheadLimit)
        #expect(machine.start("task", continuation: "caller") == true)
        guard case .deliver("caller", let response, let early) = machine.receive(Self.head) else {
            Issue.record("the head was not delivered")
            return machine
        }
        #expect(response === Self.head)
        #expect(early.isEmpty)
        return machine
    }

    @Test("the caller is resumed at the head, with the bytes that came before it as the first chunk")
    func headWithEarlyBytes() {
        var machine = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(machine.start("task", continuation: "caller") == true)
        #expect(machine.receive(Data("ab".utf8)) == false)
        #expect(machine.receive(Data("c".utf8)) == false)
        guard case .deliver("caller", _, let early) = machine.receive(Self.head) else {
            Issue.record("the head was not delivered")
            return
        }
        #expect(early == Data("abc".utf8))
        #expect(machine.receive(Data("d".utf8)) == true)
    }

    @Test("a response that is not HTTP fails the caller and cancels the task")
    func notHTTP() {
        var machine = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(machine.start("task", continuation: "caller") == true)
        let plain = URLResponse(url: Self.head.url!, mimeType: nil, expectedContentLength: 0, textEncodingName: nil)
        guard case .failNotHTTP("caller", "task") = machine.receive(plain) else {
            Issue.record("the response was not refused")
            return
        }
        #expect(machine.receive(Data("x".utf8)) == false)
    }

    @Test("cancelled before the head: the caller and the task are handed back once; before start, start refuses")
    func cancellation() {
        var running = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(running.start("task", continuation: "caller") == true)
        let cancelled = running.cancel()
        #expect(cancelled?.0 == "task")
        #expect(cancelled?.1 == "caller")
        #expect(running.cancel() == nil)
        guard case .none = running.receive(Self.head) else {
            Issue.record("a head after cancellation was delivered")
            return
        }

        var early = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(early.cancel() == nil)
        #expect(early.start("task", continuation: "caller") == false)
    }

    @Test("after the head, cancelling the caller does nothing; the reader's stop cancels the task once")
    func stopAfterHead() {
        var machine = streaming(canSuspend: false)
        #expect(machine.cancel() == nil)
        #expect(machine.stop() == "task")
        #expect(machine.stop() == nil)
        #expect(machine.receive(Data("late".utf8)) == false)
        guard case .none = machine.complete(error: Failure(), fallbackResponse: nil) else {
            Issue.record("a stopped stream was completed")
            return
        }
    }

    @Test("the task's end before the head fails the caller, or hands it the challenge's response and bytes whole")
    func completionBeforeHead() {
        var failing = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(failing.start("task", continuation: "caller") == true)
        guard case .fail("caller", let error) = failing.complete(error: Failure(), fallbackResponse: nil) else {
            Issue.record("the caller was not failed")
            return
        }
        #expect(error is Failure)

        var challenged = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(challenged.start("task", continuation: "caller") == true)
        #expect(challenged.receive(Data("denied".utf8)) == false)
        guard
            case .deliverWhole("caller", let response, let data) = challenged.complete(
                error: nil,
                fallbackResponse: Self.head
            )
        else {
            Issue.record("the fallback response was not delivered")
            return
        }
        #expect(response === Self.head)
        #expect(data == Data("denied".utf8))

        var bare = Machine(canSuspend: false, readAheadLimit: 100)
        #expect(bare.start("task", continuation: "caller") == true)
        guard case .failNotHTTP("caller") = bare.complete(error: nil, fallbackResponse: nil) else {
            Issue.record("an end without any response was not refused")
            return
        }
    }

    @Test("the task's end after the head ends the body, cleanly or with its error, once")
    func completionAfterHead() {
        var clean = streaming(canSuspend: false)
        guard case .finishBody(nil) = clean.complete(error: nil, fallbackResponse: nil) else {
            Issue.record("the body did not end cleanly")
            return
        }
        guard case .none = clean.complete(error: Failure(), fallbackResponse: nil) else {
            Issue.record("the body was ended twice")
            return
        }
        var failed = streaming(canSuspend: false)
        guard case .finishBody(let error?) = failed.complete(error: Failure(), fallbackResponse: nil) else {
            Issue.record("the body did not end with the error")
            return
        }
        #expect(error is Failure)
    }

    @Test("where tasks cannot be paused, bytes that arrive while the reader is behind are counted to the limit")
    func readAheadLimit() {
        var machine = streaming(canSuspend: false, readAheadLimit: 100)
        guard case .proceed = machine.paused(after: 60) else {
            Issue.record("60 bytes ahead overran a limit of 100")
            return
        }
        // The reader caught up: the count starts again.
        #expect(machine.demand() == nil)
        guard case .proceed = machine.paused(after: 60), case .proceed = machine.paused(after: 40) else {
            Issue.record("100 bytes ahead overran a limit of 100")
            return
        }
        guard case .overrun("task", limit: 100) = machine.paused(after: 1) else {
            Issue.record("101 bytes ahead did not overrun a limit of 100")
            return
        }
        #expect(machine.receive(Data("more".utf8)) == false)
        guard case .none = machine.complete(error: nil, fallbackResponse: nil) else {
            Issue.record("an overrun body was completed")
            return
        }
    }

    @Test("where tasks can be paused, a reader behind suspends the task once, and its demand resumes it")
    func suspendAndResume() {
        var machine = streaming(canSuspend: true, readAheadLimit: 1)
        guard case .suspend("task") = machine.paused(after: 1000) else {
            Issue.record("the task was not suspended")
            return
        }
        // A chunk already on its way while suspended neither suspends again nor overruns.
        guard case .proceed = machine.paused(after: 1000) else {
            Issue.record("a suspended task was suspended again")
            return
        }
        #expect(machine.demand() == "task")
        #expect(machine.demand() == nil)
    }

    @Test("a demand that comes before the suspension cancels it, so the task is never left suspended")
    func demandBeforeSuspension() {
        var machine = streaming(canSuspend: true)
        #expect(machine.demand() == nil)
        guard case .proceed = machine.paused(after: 10) else {
            Issue.record("the task was suspended after the reader asked for more")
            return
        }
        guard case .suspend("task") = machine.paused(after: 10) else {
            Issue.record("the next pause did not suspend the task")
            return
        }
    }
}
