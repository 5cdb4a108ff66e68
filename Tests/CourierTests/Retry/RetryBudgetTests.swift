import CourierTesting
import Foundation
import Synchronization
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("RetryBudget", .timeLimit(.minutes(1)))
struct RetryBudgetTests {
    @Test("it starts with one second of the floor and each retry takes a token")
    func startsWithFloor() {
        let budget = RetryBudget(ratio: 0.2, minimumPerSecond: 10, clock: ManualClock())
        #expect(budget.balance == 10)
        let granted = (0..<12).map { _ in budget.withdrawForRetry() }
        #expect(granted == Array(repeating: true, count: 10) + [false, false])
        #expect(budget.statistics.retries == 10)
        #expect(budget.statistics.refusals == 2)
    }

    @Test("each call adds the ratio")
    func callsAddRatio() {
        let budget = RetryBudget(ratio: 0.25, minimumPerSecond: 0, clock: ManualClock())
        #expect(!budget.withdrawForRetry())
        for _ in 0..<8 { budget.recordRequest() }
        #expect(budget.balance == 2)
        #expect(budget.withdrawForRetry())
        #expect(budget.withdrawForRetry())
        #expect(!budget.withdrawForRetry())
        #expect(budget.statistics.requests == 8)
    }

    @Test("the floor refills per second of the injected clock")
    func refillsOnClock() {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 10, clock: clock)
        while budget.withdrawForRetry() {}
        #expect(budget.balance == 0)
        clock.advance(by: .milliseconds(500))
        #expect(budget.balance == 5)
        clock.advance(by: .seconds(60))
        #expect(budget.balance == 100)
    }

    @Test("the balance never exceeds the maximum")
    func capped() {
        let budget = RetryBudget(ratio: 1, minimumPerSecond: 10, maximumBalance: 30, clock: ManualClock())
        for _ in 0..<10_000 { budget.recordRequest() }
        #expect(budget.balance == 30)
    }

    @Test("copies of a policy share one budget")
    func copiesShare() async throws {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 1, clock: ManualClock())
        let policy = RetryPolicy(backoff: .immediate, budget: budget)
        var copy = policy
        copy.maximumAttempts = 2
        #expect(copy.budget === policy.budget)

        let first = MockTransport(.status(503))
        let second = MockTransport(.status(503))
        _ = try await Client(transport: first, middleware: [.retry(policy)]).send(RetryFixtures.request())
        _ = try await Client(transport: second, middleware: [.retry(copy)]).send(RetryFixtures.request())
        #expect(first.callCount == 2)  // the one token went to the first client's retry
        #expect(second.callCount == 1)
    }

    @Test("reading RetryPolicy.default gives a new budget each time")
    func defaultBudgets() {
        #expect(RetryPolicy.default.budget !== RetryPolicy.default.budget)
        #expect(RetryPolicy.default.budget != nil)
    }

    @Test("an empty budget ends the call with its last response")
    func emptyBudget() async throws {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 0, clock: ManualClock())
        let events = Locked(0)
        let transport = MockTransport(.status(503))
        let policy = RetryPolicy(backoff: .immediate, budget: budget, onRetry: { _ in events.withLock { $0 += 1 } })
        let client = Client(transport: transport, middleware: [.retry(policy)])
        let (_, response) = try await client.send(RetryFixtures.request())
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
        #expect(events.value == 0)
        #expect(budget.statistics.refusals == 1)
    }

    @Test("a caller cancelled while its retry waits gives the retry's token back, and no retry is counted")
    func cancelledBackoffReturnsItsToken() async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 1, maximumBalance: 1, clock: clock)
        let transport = MockTransport(.status(503))
        let policy = RetryPolicy(backoff: .constant(.seconds(10)), budget: budget)
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let call = Task { try await client.send(RetryFixtures.request()) }
        await clock.waitForSleepers(count: 1)
        #expect(budget.balance < 1)  // taken for the retry that waits
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.join() }
        #expect(budget.balance == 1)
        #expect(budget.statistics.retries == 0)
        #expect(transport.callCount == 1)
    }

    @Test("a one-shot body whose retry the budget refuses ends with the last response, not bodyNotReplayable")
    func emptyBudgetWithOneShotBody() async throws {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 0, clock: ManualClock())
        let transport = MockTransport(.status(503))
        let policy = RetryPolicy(backoff: .immediate, budget: budget)
        let client = Client(transport: transport, middleware: [.retry(policy)])
        var request = RetryFixtures.request("PUT")
        request.httpBodyStream = InputStream(data: Data("x".utf8))
        let (_, response) = try await client.send(request)
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 1)
        #expect(budget.statistics.refusals == 1)
    }

    @Test("a one-shot body that cannot be sent again takes no token from the budget")
    func oneShotBodyTakesNoToken() async throws {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 1, maximumBalance: 1, clock: ManualClock())
        let transport = MockTransport(.status(503))
        let client = Client(
            transport: transport,
            middleware: [.retry(RetryPolicy(backoff: .immediate, budget: budget))]
        )
        var request = RetryFixtures.request("PUT")
        request.httpBodyStream = InputStream(data: Data("x".utf8))
        let error = await #expect(throws: CourierError.self) { try await client.send(request) }
        #expect(error?.code == .bodyNotReplayable)
        #expect(budget.balance == 1)
        #expect(budget.statistics.retries == 0)
    }

    /// Sends `count` concurrent requests through `policy` to a server that always answers 503 and
    /// returns how many attempts reached it.
    private func storm(count: Int, policy: RetryPolicy) async throws -> Int {
        let transport = CountingTransport(status: 503)
        let client = Client(transport: transport, middleware: [.retry(policy)])
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask { try await client.send(RetryFixtures.request()).1.statusCode }
            }
            for try await status in group { #expect(status == 503) }
        }
        return transport.calls.load(ordering: .relaxed)
    }

    @Test("a storm of 1,000 calls against an always-503 server stays within the budget, not 3,000 attempts")
    func storm() async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: 0.2, minimumPerSecond: 10, clock: clock)
        let attempts = try await storm(count: 1_000, policy: RetryPolicy(backoff: .immediate, budget: budget))
        // No virtual time passes, so the floor contributes only its starting second.
        let bound = 1_000 + Int(1_000 * budget.ratio) + Int(budget.minimumPerSecond)
        #expect(attempts <= bound)
        #expect(attempts > 1_000)  // the budget did allow some retries
        let statistics = budget.statistics
        #expect(statistics.requests == 1_000)
        #expect(statistics.retries == attempts - 1_000)
        #expect(statistics.refusals > 0)
    }

    @Test("the same storm without a budget sends every call three times")
    func stormWithoutBudget() async throws {
        let attempts = try await storm(count: 1_000, policy: RetryPolicy(backoff: .immediate, budget: nil))
        #expect(attempts == 3_000)
    }
}

/// Answers every request with one status and counts the calls with an atomic counter. (The storm runs
/// a thousand tasks at once; a lock-free counter keeps the thread sanitizer's view exact, since it does not
/// see the contended path of `Mutex` on Linux.)
private final class CountingTransport: Transport {
    let calls = Atomic<Int>(0)
    private let status: Int

    init(status: Int) {
        self.status = status
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        calls.add(1, ordering: .relaxed)
        return try await MockResponse.status(status).httpResponse(for: request)
    }
}
