import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Backoff", .timeLimit(.minutes(1)))
struct BackoffTests {
    @Test("exponential ceilings grow by the multiplier up to the maximum")
    func exponentialCeilings() {
        let backoff = RetryPolicy.Backoff.exponential(base: .milliseconds(100), multiplier: 2, maximum: .seconds(1))
        let ceilings = (1...6).map { backoff.ceiling(forRetry: $0) }
        #expect(
            ceilings == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1),
                .seconds(1),
            ]
        )
        #expect(backoff.ceiling(forRetry: 10_000) == .seconds(1))
    }

    @Test("the default backoff is exponential from 200 ms, doubling, at most 10 s, with full jitter")
    func defaults() {
        let backoff = RetryPolicy.default.backoff
        #expect(backoff.ceiling(forRetry: 1) == .milliseconds(200))
        #expect(backoff.ceiling(forRetry: 2) == .milliseconds(400))
        #expect(backoff.ceiling(forRetry: 20) == .seconds(10))
        #expect(backoff.delay(forRetry: 2, random: 0) == .zero)
        #expect(backoff.delay(forRetry: 2, random: 0.5) == .milliseconds(200))
    }

    @Test("full jitter spreads the delay between zero and the ceiling", arguments: [0.0, 0.25, 0.5, 0.999_999])
    func fullJitter(random: Double) {
        let backoff = RetryPolicy.Backoff.exponential(base: .milliseconds(100), jitter: .full)
        for retry in 1...5 {
            let ceiling = backoff.ceiling(forRetry: retry)
            let delay = backoff.delay(forRetry: retry, random: random)
            #expect(delay >= .zero && delay <= ceiling)
            #expect(abs(delay / .nanoseconds(1) - ceiling / .nanoseconds(1) * random) < 1)
        }
    }

    @Test("equal jitter keeps at least half the ceiling")
    func equalJitter() {
        let backoff = RetryPolicy.Backoff.exponential(base: .seconds(1), jitter: .equal)
        #expect(backoff.delay(forRetry: 1, random: 0) == .milliseconds(500))
        #expect(backoff.delay(forRetry: 2, random: 0) == .seconds(1))
        #expect(backoff.delay(forRetry: 2, random: 0.5) == .milliseconds(1500))
    }

    @Test("no jitter gives the ceiling; constant gives the same delay every time")
    func noJitterAndConstant() {
        let exponential = RetryPolicy.Backoff.exponential(base: .milliseconds(100), jitter: .none)
        #expect(exponential.delay(forRetry: 3, random: 0.1) == .milliseconds(400))
        let constant = RetryPolicy.Backoff.constant(.milliseconds(250))
        #expect(
            (1...4).map { constant.delay(forRetry: $0, random: 0.7) } == Array(repeating: .milliseconds(250), count: 4)
        )
        #expect(RetryPolicy.Backoff.immediate.delay(forRetry: 1, random: 0.5) == .zero)
    }

    @Test(
        "a random value outside 0...1 from the policy's random source is clamped, and NaN counts as zero",
        arguments: [Double.nan, -Double.nan, -1, 7, -Double.infinity, Double.infinity]
    )
    func randomOutsideItsRange(random: Double) {
        let expected: Duration = random.isNaN || random < 0 ? .zero : .seconds(2)
        for jitter in [RetryPolicy.Jitter.full, .equal] {
            let backoff = RetryPolicy.Backoff.exponential(base: .seconds(1), maximum: .seconds(10), jitter: jitter)
            let delay = backoff.delay(forRetry: 2, random: random)
            #expect(delay == (jitter == .equal && expected == .zero ? .seconds(1) : expected), "\(jitter)")
        }
    }

    @Test("a custom backoff gets the retry number, and a negative delay counts as zero")
    func custom() {
        let linear = RetryPolicy.Backoff.custom { retry in .milliseconds(100 * retry) }
        #expect(
            (1...3).map { linear.delay(forRetry: $0, random: 0.3) } == [
                .milliseconds(100), .milliseconds(200), .milliseconds(300),
            ]
        )
        let negative = RetryPolicy.Backoff.custom { _ in .seconds(-1) }
        #expect(negative.delay(forRetry: 1, random: 0) == .zero)
    }

    @Test("the retry sleeps each attempt's jittered delay, within that attempt's bounds", arguments: 0..<20)
    func sleepsWithinBounds(seed: Int) async throws {
        let clock = ManualClock()
        let random = Locked(SplitMix64(seed: UInt64(seed)))
        let events = Locked<[RetryEvent]>([])
        let retried = Arrivals()
        let backoff = RetryPolicy.Backoff.exponential(
            base: .milliseconds(100),
            multiplier: 2,
            maximum: .milliseconds(500)
        )
        let policy = RetryPolicy(
            maximumAttempts: 6,
            backoff: backoff,
            budget: nil,
            onRetry: { event in
                events.withLock { $0.append(event) }
                retried.arrive()
            },
            random: { random.withLock { $0.nextUnitInterval() } }
        )
        let transport = MockTransport(.status(503))
        let client = Client(transport: transport, middleware: [.retry(policy, clock: clock)])
        let task = Task { try await client.send(RetryFixtures.request()) }

        var slept: [Duration] = []
        for retry in 1...5 {
            await retried.wait(for: retry)
            let delay = events.value[retry - 1].delay
            let before = clock.now
            if delay > .zero {
                await clock.waitForSleepers(count: 1)
                #expect(clock.pendingDeadlines == [before.advanced(by: delay)])
                clock.advanceToNextDeadline()
            }
            slept.append(before.duration(to: clock.now))
        }
        let (_, response) = try await task.join()
        #expect(response.statusCode == 503)
        #expect(transport.callCount == 6)

        let delays = events.value.map(\.delay)
        #expect(slept == delays)
        for (index, delay) in delays.enumerated() {
            #expect(delay >= .zero)
            #expect(delay <= backoff.ceiling(forRetry: index + 1))
        }
    }

    @Test("full jitter really spreads the delays of many calls")
    func jitterSpreads() async throws {
        let delays = Locked<Set<Duration>>([])
        let policy = RetryPolicy(
            maximumAttempts: 2,
            backoff: .exponential(base: .seconds(1)),
            budget: nil,
            onRetry: { event in delays.withLock { _ = $0.insert(event.delay) } }
        )
        let clock = ManualClock()
        let client = Client(
            transport: MockTransport(.status(503)),
            middleware: [.retry(policy, clock: clock)]
        )
        for _ in 0..<20 {
            let task = Task { try await client.send(RetryFixtures.request()) }
            await clock.waitForSleepers(count: 1)
            clock.advanceToNextDeadline()
            _ = try await task.join()
        }
        #expect(delays.value.count > 10)
        #expect(delays.value.allSatisfy { $0 >= .zero && $0 <= .seconds(1) })
    }
}
