import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("URLSessionExchangeStateMachine")
struct URLSessionExchangeStateMachineTests {
    /// The task and the continuation are names.
    private typealias Machine = URLSessionExchangeStateMachine<String, String>

    private struct Failure: Error {}

    private static let url = URL(string: "https://api.example.com/items")!

    private func response(status: Int = 200, contentLength: Int? = nil) -> HTTPURLResponse {
        let headers = contentLength.map { ["Content-Length": "\($0)"] } ?? [:]
        return HTTPURLResponse(url: Self.url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    /// A machine whose task runs, with a body limit of `limit` bytes.
    private func running(method: String = "GET", limit: Int = 10) -> Machine {
        var machine = Machine(method: method, limit: limit)
        #expect(machine.start("task", continuation: "caller") == true)
        return machine
    }

    @Test("a completed exchange hands the continuation the response and the body collected")
    func completes() {
        var machine = running()
        let head = response()
        #expect(machine.receive(head) == nil)
        #expect(machine.receive(Data("hello ".utf8)) == nil)
        #expect(machine.receive(Data("you".utf8)) == nil)
        guard case .succeed("caller", let body, let delivered) = machine.complete(error: nil, fallbackResponse: nil)
        else {
            Issue.record("the exchange did not succeed")
            return
        }
        #expect(body == Data("hello you".utf8))
        #expect(delivered === head)
        #expect(machine.isFinished)
    }

    @Test("an error from the session fails the continuation with it")
    func completesWithError() {
        var machine = running()
        guard case .fail("caller", let error) = machine.complete(error: Failure(), fallbackResponse: nil) else {
            Issue.record("the exchange did not fail")
            return
        }
        #expect(error is Failure)
    }

    @Test("with no response, the fallback response is used; with no HTTP response at all, it fails")
    func fallbackResponse() {
        var machine = running()
        let challenge = response(status: 401)
        guard case .succeed(_, _, let delivered) = machine.complete(error: nil, fallbackResponse: challenge) else {
            Issue.record("the exchange did not succeed with the fallback response")
            return
        }
        #expect(delivered === challenge)

        var other = running()
        let plain = URLResponse(url: Self.url, mimeType: nil, expectedContentLength: 0, textEncodingName: nil)
        #expect(other.receive(plain) == nil)
        guard case .failNotHTTP("caller") = other.complete(error: nil, fallbackResponse: nil) else {
            Issue.record("a non-HTTP response did not fail the exchange")
            return
        }
    }

    @Test("a cancelled caller gets its continuation and task back once; later events do nothing")
    func cancelWhileRunning() {
        var machine = running()
        #expect(machine.receive(Data("hello".utf8)) == nil)
        let cancelled = machine.cancel()
        #expect(cancelled?.0 == "task")
        #expect(cancelled?.1 == "caller")
        #expect(machine.cancel() == nil)
        #expect(machine.receive(Data(repeating: 0, count: 100)) == nil)
        guard case .none = machine.complete(error: nil, fallbackResponse: response()) else {
            Issue.record("a cancelled exchange was completed")
            return
        }
    }

    @Test("a caller cancelled before the task started makes start refuse it, so the task never runs")
    func cancelBeforeStart() {
        var machine = Machine(method: "GET", limit: 10)
        #expect(machine.cancel() == nil)
        #expect(!machine.isFinished)
        #expect(machine.start("task", continuation: "caller") == false)
        #expect(machine.isFinished)
        #expect(machine.cancel() == nil)
    }

    @Test("a body over the limit is refused once, with the task to cancel and the response head")
    func bodyOverLimit() throws {
        var machine = running(limit: 10)
        let head = response()
        #expect(machine.receive(head) == nil)
        #expect(machine.receive(Data(repeating: 1, count: 6)) == nil)
        let refused = machine.receive(Data(repeating: 2, count: 6))
        let refusal = try #require(refused)
        #expect(refusal.task == "task")
        #expect(refusal.continuation == "caller")
        #expect(refusal.limit == 10)
        #expect(refusal.announcedLength == nil)
        #expect(refusal.response === head)
        #expect(machine.receive(Data(repeating: 3, count: 1)) == nil)
        guard case .none = machine.complete(error: nil, fallbackResponse: nil) else {
            Issue.record("a refused exchange was completed")
            return
        }
    }

    @Test("a Content-Length over the limit is refused on the head, except for HEAD and bodiless statuses")
    func announcedLengthOverLimit() throws {
        var machine = running(limit: 10)
        let refused = machine.receive(response(contentLength: 11))
        let refusal = try #require(refused)
        #expect(refusal.announcedLength == 11)
        #expect(machine.isFinished)

        var head = running(method: "HEAD", limit: 10)
        #expect(head.receive(response(contentLength: 11)) == nil)
        var notModified = running(limit: 10)
        #expect(notModified.receive(response(status: 304, contentLength: 11)) == nil)
        #expect(!head.isFinished && !notModified.isFinished)
    }
}

extension URLSessionExchangeStateMachine.Refusal: Equatable where Task: Equatable, Continuation: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.task == rhs.task && lhs.continuation == rhs.continuation && lhs.limit == rhs.limit
            && lhs.announcedLength == rhs.announcedLength && lhs.response === rhs.response
    }
}
