import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("FaultInjectingTransport", .timeLimit(.minutes(1)))
struct FaultInjectingTransportTests {
    /// The clock latency sleeps on and 401 waves are timed by; a new one for each test.
    private let clock = ManualClock()

    /// A transport with `faults` in front of `base`, timed by the suite's clock.
    private func injecting(
        _ faults: Fault...,
        wrapping base: any Transport = MockTransport.ok
    ) -> FaultInjectingTransport {
        FaultInjectingTransport(wrapping: base, seed: 1, clock: clock, faults: faults)
    }

    /// Sends `count` GETs one after another and returns each outcome as a short string.
    private func outcomes(of transport: any Transport, count: Int, path: String = "/items") async -> [String] {
        var outcomes: [String] = []
        for _ in 0..<count {
            do {
                outcomes.append(String(try await transport.send(request(.get, path)).1.statusCode))
            } catch let error as URLError {
                outcomes.append("URLError(\(error.code.rawValue))")
            } catch {
                outcomes.append("\(error)")
            }
        }
        return outcomes
    }

    private let mixedFaults: [Fault] = [
        .droppedConnection(rate: 0.1),
        .serviceUnavailable(rate: 0.1, retryAfter: .seconds(1)),
        .error(URLError(.timedOut), rate: 0.05),
    ]

    @Test("the same seed gives the same faults on every run; another seed gives others")
    func reproducible() async {
        func run(seed: UInt64) async -> ([String], [FaultInjectingTransport.InjectedFault]) {
            let chaos = FaultInjectingTransport(wrapping: MockTransport.ok, seed: seed, faults: mixedFaults)
            return (await outcomes(of: chaos, count: 200), chaos.injected)
        }
        let first = await run(seed: 7)
        let again = await run(seed: 7)
        let other = await run(seed: 8)
        #expect(first.0 == again.0)
        #expect(first.1 == again.1)
        #expect(first.0 != other.0)
        #expect(Set(first.0) == ["200", "503", "URLError(-1005)", "URLError(-1001)"])
    }

    @Test("rates hold over many requests", arguments: [0.01, 0.1, 0.5])
    func rates(rate: Double) async throws {
        let chaos = FaultInjectingTransport(wrapping: MockTransport.ok, seed: 42, faults: [.status(500, rate: rate)])
        let results = await outcomes(of: chaos, count: 10_000)
        let failed = Double(results.count { $0 == "500" })
        // A binomial count stays within 5 standard deviations of its mean.
        let deviation = 5 * (10_000 * rate * (1 - rate)).squareRoot()
        #expect(abs(failed - 10_000 * rate) < deviation)
        #expect(chaos.injected.count == Int(failed))
    }

    @Test("a fault's decisions do not depend on the faults listed after it")
    func independentStreams() async throws {
        let alone = injecting(.status(500, rate: 0.3))
        // The latency sleeps on the suite's manual clock, which `run` moves: with a real clock, 300 sleeps of up
        // to 1 ms took over a minute in a thread-sanitized run of the whole suite, each wake-up queued behind
        // every other test's work (CI sweep, 2026-11-27).
        let withMore = injecting(.status(500, rate: 0.3), .latency(.uniform(.zero ... .milliseconds(1))))
        let aloneResults = await outcomes(of: alone, count: 300)
        let moreResults = try await clock.run { [self] in await outcomes(of: withMore, count: 300) }
        #expect(aloneResults.count == 300)
        #expect(aloneResults == moreResults)
        #expect(withMore.injected.count > aloneResults.count { $0 == "500" })
    }

    @Test("forRequests limits a fault to some arrival indexes")
    func forRequests() async {
        let chaos = injecting(.serviceUnavailable(retryAfter: .seconds(2)).forRequests(0..<3))
        #expect(await outcomes(of: chaos, count: 5) == ["503", "503", "503", "200", "200"])
        #expect(chaos.injected.map(\.requestIndex) == [0, 1, 2])
        #expect(chaos.injected.allSatisfy { $0.kind == .status(503) })
    }

    @Test("only(_:_:) limits a fault to matching requests")
    func onlyRoute() async {
        let chaos = injecting(.status(502).only(.get, "/reports/**"))
        #expect(await outcomes(of: chaos, count: 2, path: "/reports/2024/q1") == ["502", "502"])
        #expect(await outcomes(of: chaos, count: 2, path: "/users") == ["200", "200"])
    }

    @Test("a connection dropped before sending never reaches the server; one dropped after sending does")
    func droppedConnections() async throws {
        let before = MockTransport.ok
        let dropBefore = injecting(.droppedConnection(), wrapping: before)
        let error = await #expect(throws: URLError.self) { try await dropBefore.send(request(.post, "/orders")) }
        #expect(error?.code == .networkConnectionLost)
        #expect(before.callCount == 0)

        let after = MockTransport.ok
        let dropAfter = injecting(.droppedConnection(afterSending: true), wrapping: after)
        let lost = await #expect(throws: URLError.self) { try await dropAfter.send(request(.post, "/orders")) }
        #expect(lost?.code == .networkConnectionLost)
        #expect(after.callCount == 1)
        #expect(dropAfter.injected == [.init(requestIndex: 0, kind: .droppedAfterSending)])
    }

    @Test(
        "latency sleeps on the injected clock before the request is sent; a request cancelled meanwhile is never sent"
    )
    func latency() async throws {
        let base = MockTransport.ok
        let chaos = injecting(.latency(.fixed(.seconds(2))), wrapping: base)
        let call = Task { try await chaos.send(request(.get, "/")) }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(2))])
        #expect(base.callCount == 0)
        clock.advance(by: .seconds(2))
        #expect(try await call.join().1.statusCode == 200)
        #expect(base.callCount == 1)
        #expect(chaos.injected == [.init(requestIndex: 0, kind: .latency(.seconds(2)))])

        await expectCancelledWhileAsleep(Task { try await chaos.send(request(.get, "/")) }, on: clock)
        #expect(base.callCount == 1)
    }

    @Test("401 waves every N requests revoke the credentials seen before the wave")
    func unauthorizedWavesByCount() async throws {
        let chaos = injecting(.unauthorizedWaves(everyRequests: 3))
        func send(_ token: String?) async throws -> Int {
            let headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
            return try await chaos.send(request(.get, "/me", headers: headers)).1.statusCode
        }
        // Requests 0-2: wave 0. t1 is seen.
        #expect(try await send("t1") == 200)
        #expect(try await send("t1") == 200)
        #expect(try await send(nil) == 200)
        // Request 3 starts wave 1: t1 is revoked, a new token passes.
        #expect(try await send("t1") == 401)
        #expect(try await send("t2") == 200)
        #expect(try await send("t2") == 200)
        // Request 6 starts wave 2: t2 is revoked too.
        #expect(try await send("t2") == 401)
        #expect(try await send("t3") == 200)
        #expect(chaos.injected.map(\.requestIndex) == [3, 6])
        #expect(chaos.injected.allSatisfy { $0.kind == .revokedCredential })
    }

    @Test("401 waves by time follow the injected clock, with an invalid_token challenge")
    func unauthorizedWavesByTime() async throws {
        let chaos = injecting(.unauthorizedWaves(every: .seconds(60)))
        let old = request(.get, "/me", headers: ["Authorization": "Bearer old"])
        #expect(try await chaos.send(old).1.statusCode == 200)
        clock.advance(by: .seconds(59))
        #expect(try await chaos.send(old).1.statusCode == 200)
        clock.advance(by: .seconds(1))
        let rejected = try await chaos.send(old).1
        #expect(rejected.statusCode == 401)
        #expect(rejected.value(forHTTPHeaderField: "WWW-Authenticate") == #"Bearer error="invalid_token""#)
        #expect(
            try await chaos.send(request(.get, "/me", headers: ["Authorization": "Bearer new"])).1.statusCode == 200
        )
    }

    @Test("the first answering fault listed wins, and latency still applies")
    func precedence() async throws {
        let chaos = injecting(
            .status(418),
            .latency(.fixed(.seconds(1))),
            .status(500),
            .droppedConnection(afterSending: true)
        )
        let status = try await clock.run { try await chaos.send(request(.get, "/")).1.statusCode }
        #expect(status == 418)
        #expect(clock.now.offset == .seconds(1))
        #expect(chaos.injected.map(\.kind) == [.status(418), .latency(.seconds(1))])
    }
}

@Suite("Seeded randomness")
struct SeededRandomTests {
    @Test("SplitMix64 produces the reference sequence")
    func referenceSequence() {
        var generator = SplitMix64(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(generator.next() == 0x06C4_5D18_8009_454F)
    }

    @Test("unit-interval draws stay in 0..<1 and spread evenly")
    func unitInterval() {
        var generator = SplitMix64(seed: 99)
        var buckets = Array(repeating: 0, count: 10)
        for _ in 0..<10_000 {
            let value = generator.nextUnitInterval()
            #expect((0..<1).contains(value))
            buckets[Int(value * 10)] += 1
        }
        #expect(buckets.allSatisfy { (850...1150).contains($0) })
    }

    @Test("derived generators differ by key and repeat for the same key")
    func derived() {
        var a = SplitMix64.derived(seed: 1, 2, 3)
        var b = SplitMix64.derived(seed: 1, 2, 3)
        var c = SplitMix64.derived(seed: 1, 3, 2)
        let first = a.next()
        #expect(first == b.next())
        #expect(first != c.next())
    }

    private func samples(_ distribution: LatencyDistribution, count: Int = 10_000) -> [Double] {
        var generator = SplitMix64(seed: 5)
        return (0..<count).map { _ in
            let (seconds, attoseconds) = distribution.sample(using: &generator).components
            return Double(seconds) + Double(attoseconds) * 1e-18
        }.sorted()
    }

    @Test("uniform latency stays in its range and averages its midpoint")
    func uniform() {
        let values = samples(.uniform(.milliseconds(100) ... .milliseconds(300)))
        #expect(values.first! >= 0.1)
        #expect(values.last! <= 0.3)
        #expect(abs(values.reduce(0, +) / Double(values.count) - 0.2) < 0.005)
    }

    @Test("exponential latency has its mean and respects the cap")
    func exponential() {
        let values = samples(.exponential(mean: .milliseconds(100)))
        #expect(abs(values.reduce(0, +) / Double(values.count) - 0.1) < 0.005)
        var generator = SplitMix64(seed: 5)
        let capped = LatencyDistribution.exponential(mean: .milliseconds(100), cap: .milliseconds(150))
        let longest = (0..<10_000).map { _ in capped.sample(using: &generator) }.max()
        #expect(longest == .milliseconds(150))
    }

    @Test("log-normal latency has the median and 99th percentile it was given")
    func logNormal() {
        let values = samples(.logNormal(median: .milliseconds(40), p99: .milliseconds(800)))
        let median = values[values.count / 2]
        let p99 = values[values.count * 99 / 100]
        #expect(abs(median - 0.04) < 0.004)
        #expect(abs(p99 - 0.8) < 0.12)
    }
}
