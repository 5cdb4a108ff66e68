import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("timing")
struct TimingTests {
    private let clock = ManualClock()
    private let reports = Locked<[Report]>([])

    private struct Report: Sendable {
        var url: URL?
        var outcome: RequestOutcome
        var duration: Duration
    }

    private struct Unreachable: Error {}

    private func timing(_ clock: ManualClock, into reports: Locked<[Report]>) -> Middleware {
        .timing(clock: clock) { request, outcome, duration in
            reports.withLock { $0.append(Report(url: request.url, outcome: outcome, duration: duration)) }
        }
    }

    @Test("a response is reported as a success with its status and the virtual duration")
    func success() async throws {
        let transport = MockTransport.taking(.milliseconds(250), on: clock, .status(200))
        let client = makeClient(transport, [timing(clock, into: reports)])
        _ = try await client.send(URLRequest(url: testURL))
        let report = try #require(reports.value.first)
        #expect(reports.value.count == 1)
        #expect(report.url == testURL)
        #expect(report.duration == .milliseconds(250))
        guard case .success(let status) = report.outcome else {
            Issue.record("expected success, got \(report.outcome)")
            return
        }
        #expect(status == 200)
    }

    @Test("a server error that nothing validated is still a success with that status")
    func serverErrorIsSuccess() async throws {
        let client = makeClient(MockTransport(.serverError), [timing(clock, into: reports)])
        _ = try await client.send(URLRequest(url: testURL))
        guard case .success(let status) = try #require(reports.value.first).outcome else {
            Issue.record("expected success")
            return
        }
        #expect(status == 500)
    }

    @Test("a failure is reported with its error and duration, then passed on unchanged")
    func failure() async throws {
        let transport = MockTransport { _ in
            clock.advance(by: .seconds(3))
            throw Unreachable()
        }
        let client = makeClient(transport, [timing(clock, into: reports)])
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: testURL)) }
        #expect(error.code == .transport)
        let report = try #require(reports.value.first)
        #expect(report.duration == .seconds(3))
        guard case .failure(let reported) = report.outcome else {
            Issue.record("expected failure, got \(report.outcome)")
            return
        }
        #expect((reported as? CourierError)?.code == .transport)
        #expect((reported as? CourierError)?.underlying is Unreachable)
    }

    @Test("time spent inside, such as in inner middleware, is included")
    func includesInnerTime() async throws {
        let slowInner = Middleware { request, next in
            clock.advance(by: .milliseconds(5))
            let result = try await next(request)
            clock.advance(by: .milliseconds(7))
            return result
        }
        let transport = MockTransport.taking(.milliseconds(11), on: clock, .ok)
        let client = makeClient(transport, [timing(clock, into: reports), slowInner])
        _ = try await client.send(URLRequest(url: testURL))
        #expect(reports.value.map(\.duration) == [.milliseconds(23)])
    }

    @Test("a cancelled request is reported as cancelled and stays a CancellationError", .timeLimit(.minutes(1)))
    func cancelled() async throws {
        let arrived = Arrivals()
        let transport = MockTransport.hanging(counting: arrived)
        let client = makeClient(transport, [timing(clock, into: reports)])
        let task = Task { try await client.send(URLRequest(url: testURL)) }
        await arrived.wait(for: 1)
        clock.advance(by: .milliseconds(9))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        let report = try #require(reports.value.first)
        #expect(report.duration == .milliseconds(9))
        guard case .cancelled = report.outcome else {
            Issue.record("expected cancelled, got \(report.outcome)")
            return
        }
    }

    @Test("the timing middleware is named timing")
    func name() {
        #expect(Middleware.timing { _, _, _ in }.name == "timing")
    }
}
