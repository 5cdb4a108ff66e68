import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A store in memory that counts the slots given back with ``RateLimitStore/release(_:of:)``.
private final class ReleasingRateLimitStore: RateLimitStore {
    let inner: InMemoryRateLimitStore
    let released = Locked(0)

    init(currentDate: @escaping @Sendable () -> Date) {
        inner = InMemoryRateLimitStore(currentDate: currentDate)
    }

    func quota(for partition: String) async throws -> RateLimitQuota? { nil }
    func record(_ quota: RateLimitQuota, for partition: String) async throws {}

    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        await inner.reserve(count, in: partition, limit: limit, window: window)
    }

    func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        released.withLock { $0 += count }
        await inner.release(count, of: reservation)
    }
}

/// A store that records how many slots each reservation asked for, and passes every call on.
private final class CountingReservations: RateLimitStore {
    let inner: any RateLimitStore
    let asked: Locked<[Int]>

    init(_ inner: any RateLimitStore, _ asked: Locked<[Int]>) {
        (self.inner, self.asked) = (inner, asked)
    }

    func quota(for partition: String) async throws -> RateLimitQuota? { try await inner.quota(for: partition) }
    func record(_ quota: RateLimitQuota, for partition: String) async throws {
        try await inner.record(quota, for: partition)
    }

    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        asked.withLock { $0.append(count) }
        return try await inner.reserve(count, in: partition, limit: limit, window: window)
    }

    func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        try await inner.release(count, of: reservation)
    }
}

/// A store whose writes wait at a gate, counting how many run at once.
private final class GatedWriteStore: RateLimitStore {
    let gate = Gate()
    let active = Locked(0)
    let peak = Locked(0)
    let written = Locked<[String]>([])
    /// The same writes, the partition as it came (its bytes), for partitions whose descriptions look alike.
    let writes = Locked<[(partition: String, remaining: Int)]>([])

    func quota(for partition: String) async throws -> RateLimitQuota? { nil }

    func record(_ quota: RateLimitQuota, for partition: String) async throws {
        let now = active.withLock { active in
            active += 1
            return active
        }
        peak.withLock { $0 = max($0, now) }
        await gate.wait()
        written.withLock { $0.append("\(partition)=\(quota.remaining)") }
        writes.withLock { $0.append((partition, quota.remaining)) }
        active.withLock { $0 -= 1 }
    }
}

/// A store that answers every reservation with the same made-up numbers.
private final class LyingRateLimitStore: RateLimitStore {
    let granted: Int
    let endsIn: Double
    let window: Int
    let calls = Locked(0)
    let currentDate: @Sendable () -> Date

    init(granted: Int, endsIn: Double, window: Int, currentDate: @escaping @Sendable () -> Date) {
        (self.granted, self.endsIn, self.window, self.currentDate) = (granted, endsIn, window, currentDate)
    }

    func quota(for partition: String) async throws -> RateLimitQuota? { nil }
    func record(_ quota: RateLimitQuota, for partition: String) async throws {}

    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        calls.withLock { $0 += 1 }
        return RateLimitReservation(
            partition: partition,
            granted: granted,
            windowEndsAt: currentDate().addingTimeInterval(endsIn),
            window: self.window
        )
    }
}

/// A store that answers `delay` after it is asked, counting what it says from when it was asked, as PostgreSQL's
/// `statement_timestamp()` does (a wait for the partition's row lock included): the fleet's first window ends at
/// `end` on the clock; after it, the window is the others' and nothing is granted.
private final class SlowStatementStore: RateLimitStore {
    let clock: ManualClock
    let delay: Duration
    let end: Duration
    let currentDate: @Sendable () -> Date

    init(clock: ManualClock, delay: Duration, end: Duration, currentDate: @escaping @Sendable () -> Date) {
        (self.clock, self.delay, self.end, self.currentDate) = (clock, delay, end, currentDate)
    }

    func quota(for partition: String) async throws -> RateLimitQuota? { nil }
    func record(_ quota: RateLimitQuota, for partition: String) async throws {}
    func release(_ count: Int, of reservation: RateLimitReservation) async throws {}

    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        let asked = clock.now.offset
        try await clock.sleep(for: delay)
        let first = asked < end
        let endsIn = first ? end - asked : .seconds(100)
        return RateLimitReservation(
            partition: partition,
            granted: first ? count : 0,
            windowEndsAt: currentDate().addingTimeInterval(endsIn.timeInterval),
            window: first ? 1 : 2
        )
    }
}

/// Findings of a hostile review of the shared limit (issue 28): each test failed on 6da3b83.
@Suite("A shared limit under attack: counters, waits and slots", .timeLimit(.minutes(1)))
struct SharedLimitAttackTests {
    private let clock = ManualClock()
    private static let epoch = Date(timeIntervalSinceReferenceDate: 0)
    private let url = URL(string: "https://api.example.test/items")!
    private let partition = "api.example.test:443"

    private var currentDate: @Sendable () -> Date {
        { [clock] in Self.epoch.addingTimeInterval(clock.now.offset.timeInterval) }
    }

    /// A middleware that cancels the task of the request it passes on.
    private static let cancelling = Middleware(name: "cancelling") { request, next in
        withUnsafeCurrentTask { $0?.cancel() }
        return try await next(request)
    }

    @Test("A request whose task is cancelled before it asks for a shared slot leaves no count behind")
    func cancelledBeforeAsking() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let limiter = RateLimiter(
            RateLimitPolicy(sharedLimit: .init(maxRequests: 10, per: .seconds(2)), currentDate: currentDate),
            store: store,
            clock: clock
        )
        let base = URL(string: "https://api.example.test")!
        let sent = Locked(0)
        let transport = MockTransport { _ in
            sent.withLock { $0 += 1 }
            return .ok
        }
        let client = Client(baseURL: base, transport: transport, middleware: [.rateLimiting(limiter)])
        let cancelled = Client(
            baseURL: base,
            transport: transport,
            middleware: [Self.cancelling, .rateLimiting(limiter)]
        )
        _ = try await clock.run { try await client.send(URLRequest(url: url)) }
        // In a task of its own: the middleware cancels the task it runs in.
        let task = Task { try await cancelled.send(URLRequest(url: url)) }
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(sent.withLock { $0 } == 1)
        let block = try #require(limiter.shared?.block(partition))
        // On 6da3b83: -1, and the next reservation asked the store for 0 slots, again and again.
        #expect(block.pending == 0 && block.inFlight == 0 && block.waiters.isEmpty)
        #expect(limiter.state(for: partition)?.inFlight == 0)
        let status = try await clock.run { try await client.send(URLRequest(url: url)).1.statusCode }
        #expect(status == 200)
        #expect(store.reservations.withLock { $0 }.allSatisfy { $0.granted > 0 })
    }

    @Test("maximumWait bounds a request's whole wait: the client limit's and the shared window's together")
    func maximumWaitCountsBothWaits() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let maximumWait = Duration.milliseconds(1_800)
        let limiter = RateLimiter(
            RateLimitPolicy(
                clientLimit: .init(maxRequests: 1, per: .milliseconds(1_500)),
                sharedLimit: .init(maxRequests: 1, per: .milliseconds(1_900)),
                maximumWait: maximumWait,
                currentDate: currentDate
            ),
            store: store,
            clock: clock
        )
        let sends = Locked<[Duration]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { [clock] _ in
                sends.withLock { $0.append(clock.now.offset) }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        let outcomes = try await clock.run {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        do {
                            _ = try await client.send(URLRequest(url: url))
                            return "sent"
                        } catch let error as CourierError {
                            return "\(error.code)"
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        // Both arrived at 0: none may be sent later than the maximum wait.
        #expect(sends.withLock { $0 }.allSatisfy { $0 <= maximumWait }, "sent at \(sends.withLock { $0 })")
        #expect(outcomes.sorted() == ["rateLimited", "sent"])
        #expect(limiter.shared?.block(partition)?.pending == 0)
        #expect(limiter.state(for: partition)?.inFlight == 0)
    }

    // After a request slept through a window of the fleet, it gives the limiter's slot back and asks the limiter
    // again (the middleware passes its arrival): the maximum wait still counts from the arrival.
    @Test("Asking the limiter again after a shared wait: refused when the whole wait would pass maximumWait")
    func maximumWaitCountsFromArrivalWhenAskingAgain() async throws {
        let limiter = RateLimiter(
            RateLimitPolicy(
                clientLimit: .init(maxRequests: 1, per: .seconds(1)),
                maximumWait: .milliseconds(800),
                currentDate: currentDate
            ),
            clock: clock
        )
        let request = URLRequest(url: url)
        let first = try await limiter.acquire(request, partition: partition)
        // 600 ms later, a request that arrived at 0 asks again: the next slot, at 1 s, is 1 s after its arrival.
        clock.advance(by: .milliseconds(600))
        let outcome = try await clock.run {
            do {
                let lease = try await limiter.acquire(request, partition: partition, since: .zero)
                limiter.returnUnused(lease)
                return "slot at \(clock.now.offset)"
            } catch let error as CourierError {
                return "\(error.code) at \(clock.now.offset)"
            }
        }
        #expect(outcome == "rateLimited at 0.6 seconds")
        limiter.returnUnused(first)
        #expect(limiter.state(for: partition)?.inFlight == 0)
    }

    @Test("A store that answers late with a window's end counted from when it was asked: nothing is sent past that end")
    func slowAnswerDoesNotStretchTheWindow() async throws {
        let end = Duration.seconds(1)
        let store = SlowStatementStore(clock: clock, delay: .milliseconds(300), end: end, currentDate: currentDate)
        let policy = RateLimitPolicy(
            sharedLimit: .init(maxRequests: 100, per: .seconds(2)),
            maximumWait: .zero,
            currentDate: currentDate
        )
        let limiter = RateLimiter(policy, store: store, clock: clock)
        let sentAt = Locked<[Duration]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { [clock] _ in
                sentAt.withLock { $0.append(clock.now.offset) }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        try await clock.run { [clock, url] in
            for _ in 0..<16 {
                _ = try? await client.send(URLRequest(url: url))
                try await clock.sleep(for: .milliseconds(100))
            }
        }
        #expect(!sentAt.value.isEmpty)
        #expect(sentAt.value.allSatisfy { $0 < end }, "\(sentAt.value)")
    }

    @Test("maximumWait bounds the wait for a reservation from a store that does not answer")
    func maximumWaitBoundsReservation() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        store.mode.withLock { $0 = .hangingReservations }
        var policy = RateLimitPolicy(
            sharedLimit: .init(maxRequests: 10, per: .seconds(2)),
            maximumWait: .milliseconds(500),
            currentDate: currentDate
        )
        policy.storeTimeout = .seconds(5)
        let limiter = RateLimiter(policy, store: store, clock: clock)
        let sent = Locked(0)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in
                sent.withLock { $0 += 1 }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        let outcome = try await clock.run {
            do {
                _ = try await client.send(URLRequest(url: url))
                return "sent"
            } catch let error as CourierError {
                return "\(error.code)"
            }
        }
        // On 6da3b83: sent after the store timeout (5 s), ten times the maximum wait.
        #expect(outcome == "rateLimited")
        #expect(clock.now.offset == .milliseconds(500))
        #expect(sent.withLock { $0 } == 0)
        #expect(limiter.shared?.block(partition)?.pending == 0)
        #expect(limiter.state(for: partition)?.inFlight == 0)
    }

    // Finding 5: the limiter's slot was held through the wait for the fleet's next window, so requests leased in
    // earlier client-limit windows went together when it opened: 15 in one second at 10 per second.
    @Test("A request that waited for the shared window still keeps the client limit's window it is sent in")
    func sharedWaitKeepsClientLimit() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let limiter = RateLimiter(
            RateLimitPolicy(
                clientLimit: .init(maxRequests: 10, per: .seconds(1)),
                sharedLimit: .init(maxRequests: 15, per: .seconds(3)),
                maximumWait: nil,
                currentDate: currentDate
            ),
            store: store,
            clock: clock
        )
        let sends = Locked<[Duration]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { [clock] _ in
                sends.withLock { $0.append(clock.now.offset) }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        try await clock.run {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<40 { group.addTask { _ = try await client.send(URLRequest(url: url)) } }
                try await group.waitForAll()
            }
        }
        // The client limit's windows start with the first request, at 0: [0, 1), [1, 2), …
        let perSecond = Dictionary(grouping: sends.withLock { $0 }) { Int($0 / .seconds(1)) }.mapValues(\.count)
        #expect(perSecond.values.reduce(0, +) == 40)
        #expect(perSecond.values.allSatisfy { $0 <= 10 }, "sent per second: \(perSecond.sorted { $0.key < $1.key })")
    }

    @Test("A replica gives back the slots it did not use once idle, so another replica can fill the window")
    func unusedSlotsGoBack() async throws {
        let store = ReleasingRateLimitStore(currentDate: currentDate)
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 10, per: .seconds(2), blockSize: 10)
        let sends = Locked<[(replica: Int, at: Duration)]>([])
        let gate = Gate()
        func replica(_ index: Int, held: Bool) -> Client {
            // A client limit far above the shared one: no probe, the server's numbers play no part.
            let limiter = RateLimiter(
                RateLimitPolicy(
                    clientLimit: .init(maxRequests: 1_000, per: .seconds(1)),
                    sharedLimit: limit,
                    currentDate: currentDate
                ),
                store: store,
                clock: clock
            )
            return Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: MockTransport { [clock] _ in
                    sends.withLock { $0.append((index, clock.now.offset)) }
                    if held { await gate.wait() }
                    return .ok
                },
                middleware: [.rateLimiting(limiter)]
            )
        }
        let a = replica(0, held: true)
        let b = replica(1, held: false)
        // Replica A: one request in flight, then a second, which asks for twice the first block (2 slots) and
        // uses one.
        let first = Task { try await a.send(URLRequest(url: url)) }
        try await waitUntil { sends.withLock { $0.count } == 1 }
        let second = Task { try await a.send(URLRequest(url: url)) }
        try await waitUntil { sends.withLock { $0.count } == 2 }
        gate.open()
        _ = try await first.join()
        _ = try await second.join()
        // A has sent nothing for a twentieth of the window: its unused slot goes back.
        #expect(store.released.withLock { $0 } == 0)
        clock.advance(by: .milliseconds(100))
        try await waitUntil { store.released.withLock { $0 } == 1 }
        // Replica B: 8 requests; the fleet has sent 2 of the window's 10.
        try await clock.run {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { _ = try await b.send(URLRequest(url: url)) } }
                try await group.waitForAll()
            }
        }
        let fromB = sends.withLock { $0 }.filter { $0.replica == 1 }
        #expect(
            fromB.count == 8 && fromB.allSatisfy { $0.at == .milliseconds(100) },
            "B sent at \(fromB.map(\.at))"
        )
    }

    /// One request of the seeded model: when it arrives, at which replica, and how it may end early.
    private struct Planned: Sendable {
        var replica: Int
        var arrival: Duration
        /// The call's timeout, when it has one.
        var timeout: Duration?
        /// When its task is cancelled, if it is.
        var cancelAt: Duration?
    }

    @Test(
        "Seeded model with deadlines, cancellations and a store that fails or hangs for a while: counters back to 0, no caller past its deadline or maximum wait, windows kept while the store answers",
        arguments: 0..<64
    )
    func seededModelUnderFire(seed: UInt64) async throws {
        var random = SplitMix64(seed: 0xBAD_5EED &+ seed)
        let maxRequests = Int.random(in: 2...20, using: &random)
        let limit = RateLimitPolicy.SharedLimit(
            maxRequests: maxRequests,
            per: .milliseconds(Int64.random(in: 500...2500, using: &random)),
            blockSize: Int.random(in: 1...maxRequests, using: &random)
        )
        let maximumWait: Duration? =
            Bool.random(using: &random) ? .milliseconds(Int64.random(in: 300...4000, using: &random)) : nil
        let storeTimeout = Duration.milliseconds(Int64.random(in: 100...1500, using: &random))
        // Odd seeds: the store fails (even fault) or hangs (odd fault) between two random times.
        let fault: (mode: RecordingRateLimitStore.Mode, from: Duration, to: Duration)? =
            seed % 2 == 1
            ? (
                Bool.random(using: &random) ? .failing : .hangingReservations,
                .milliseconds(Int64.random(in: 0...3000, using: &random)),
                .milliseconds(Int64.random(in: 3000...6000, using: &random))
            ) : nil
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let sends = Locked<[(id: Int, at: Duration)]>([])
        let limiters = (0..<Int.random(in: 2...4, using: &random)).map { _ in
            var policy = RateLimitPolicy(sharedLimit: limit, maximumWait: maximumWait, currentDate: currentDate)
            policy.storeTimeout = storeTimeout
            return RateLimiter(policy, store: store, clock: clock)
        }
        let plan = (0..<Int.random(in: 5...(4 * maxRequests + 5), using: &random)).map { _ in
            Planned(
                replica: Int.random(in: 0..<limiters.count, using: &random),
                arrival: .milliseconds(Int64.random(in: 0...6000, using: &random)),
                timeout: Int.random(in: 0..<3, using: &random) == 0
                    ? .milliseconds(Int64.random(in: 50...3000, using: &random)) : nil,
                cancelAt: Int.random(in: 0..<4, using: &random) == 0
                    ? .milliseconds(Int64.random(in: 0...7000, using: &random)) : nil
            )
        }
        let transport = MockTransport { [clock] request in
            let id = Int(request.header("X-Id") ?? "") ?? -1
            sends.withLock { $0.append((id, clock.now.offset)) }
            return .ok
        }
        let outcomes = try await clock.run { [clock] in
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                if let fault {
                    group.addTask {
                        try await clock.sleep(until: .init(offset: fault.from))
                        store.mode.withLock { $0 = fault.mode }
                        try await clock.sleep(until: .init(offset: fault.to))
                        store.mode.withLock { $0 = .normal }
                        return (-1, "fault")
                    }
                }
                for (id, planned) in plan.enumerated() {
                    var middleware: [Middleware] = []
                    if let timeout = planned.timeout { middleware.append(.timeout(timeout, clock: clock)) }
                    middleware.append(.rateLimiting(limiters[planned.replica]))
                    let client = Client(
                        baseURL: URL(string: "https://api.example.test")!,
                        transport: transport,
                        middleware: middleware
                    )
                    var request = URLRequest(url: url)
                    request.setValue("\(id)", forHTTPHeaderField: "X-Id")
                    group.addTask { [request] in
                        try await clock.sleep(until: .init(offset: planned.arrival))
                        return try await withThrowingTaskGroup(of: String?.self) { call in
                            call.addTask {
                                do {
                                    _ = try await client.send(request)
                                    return "sent"
                                } catch let error as CourierError {
                                    return "\(error.code)"
                                } catch is CancellationError {
                                    return "cancelled"
                                }
                            }
                            if let cancelAt = planned.cancelAt {
                                call.addTask {
                                    try? await clock.sleep(until: .init(offset: cancelAt))
                                    return nil
                                }
                            }
                            var outcome = "cancelled"
                            for try await result in call {
                                if let result {
                                    outcome = result
                                    break
                                }
                                call.cancelAll()
                            }
                            call.cancelAll()
                            return (id, outcome)
                        }
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
        }
        let sent = sends.withLock { $0 }
        let sentAt = Dictionary(sent.map { ($0.id, $0.at) }, uniquingKeysWith: min)
        #expect(sent.count == sentAt.count, "seed \(seed): a request sent twice")
        for (id, planned) in plan.enumerated() {
            let outcome = outcomes[id] ?? "missing"
            #expect(["sent", "timedOut", "rateLimited", "cancelled"].contains(outcome), "seed \(seed): \(outcome)")
            if outcome == "sent" { #expect(sentAt[id] != nil, "seed \(seed): request \(id) sent, not seen") }
            if outcome == "rateLimited" { #expect(sentAt[id] == nil, "seed \(seed): request \(id) rejected, but sent") }
            guard let at = sentAt[id] else { continue }
            if let timeout = planned.timeout {
                #expect(at <= planned.arrival + timeout, "seed \(seed): request \(id) sent past its deadline")
            }
            if let maximumWait {
                #expect(at <= planned.arrival + maximumWait, "seed \(seed): request \(id) waited past maximumWait")
            }
            if let cancelAt = planned.cancelAt {
                // A task cancelled before it arrives runs until its first suspension: a slot in its block lets it go.
                #expect(at <= max(cancelAt, planned.arrival), "seed \(seed): request \(id) sent after its cancellation")
            }
        }
        // Every count back to 0 on every path.
        for limiter in limiters {
            #expect(limiter.state(for: partition).map { $0.inFlight == 0 } ?? true, "seed \(seed)")
            if let block = limiter.shared?.block(partition) {
                #expect(block.inFlight == 0 && block.pending == 0 && block.waiters.isEmpty, "seed \(seed)")
            }
        }
        let reservations = store.reservations.withLock { $0 }
        #expect(reservations.allSatisfy { $0.granted >= 0 }, "seed \(seed)")
        // While the store answers, the windows hold: at most maxRequests per window, none in a margin.
        guard fault == nil else { return }
        let length = limit.window + limit.margin
        var starts: [Int: Duration] = [:]
        for reservation in reservations {
            starts[reservation.window] =
                .seconds(reservation.windowEndsAt.timeIntervalSince(Self.epoch)) - length - .microseconds(1)
        }
        var counts: [Int: Int] = [:]
        for send in sent {
            guard let (number, start) = starts.filter({ $0.value <= send.at }).max(by: { $0.value < $1.value }) else {
                Issue.record("seed \(seed): a request at \(send.at) before any window")
                continue
            }
            #expect(send.at <= start + limit.window + .microseconds(2), "seed \(seed): in window \(number)'s margin")
            counts[number, default: 0] += 1
        }
        #expect(counts.values.allSatisfy { $0 <= maxRequests }, "seed \(seed): \(counts)")
    }

    @Test("Quota writes go one at a time, and only a partition's latest quota when several came meanwhile")
    func writesCoalesce() async throws {
        let store = GatedWriteStore()
        // A timeout on a clock nobody moves: it never fires.
        let writer = StoreWriter(store: store, timeout: .seconds(1)) { [clock] in try await clock.sleep(for: $0) }
        func quota(_ remaining: Int) -> RateLimitQuota {
            RateLimitQuota(limit: 10, remaining: remaining, resetsAt: nil, window: nil)
        }
        writer.write(quota(9), for: "a")
        try await waitUntil { store.active.withLock { $0 } == 1 }
        writer.write(quota(8), for: "a")
        writer.write(quota(1), for: "b")
        writer.write(quota(7), for: "a")
        store.gate.open()
        await writer.settled()
        #expect(store.written.withLock { $0 } == ["a=9", "a=7", "b=1"])
        #expect(store.peak.withLock { $0 } == 1)
    }

    @Test("Quota writes of two partitions whose names differ in bytes but are equal as Strings are both written")
    func writesKeepEquivalentPartitionsApart() async throws {
        let store = GatedWriteStore()
        let writer = StoreWriter(store: store, timeout: .seconds(1)) { [clock] in try await clock.sleep(for: $0) }
        func quota(_ remaining: Int) -> RateLimitQuota {
            RateLimitQuota(limit: 10, remaining: remaining, resetsAt: nil, window: nil)
        }
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        try #require(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
        writer.write(quota(9), for: "x")
        try await waitUntil { store.active.withLock { $0 } == 1 }
        writer.write(quota(1), for: composed)
        writer.write(quota(2), for: decomposed)
        store.gate.open()
        await writer.settled()
        let written = store.writes.withLock { $0 }
        #expect(
            written.map { Array($0.partition.utf8) } == [Array("x".utf8), Array(composed.utf8), Array(decomposed.utf8)]
        )
        #expect(written.map(\.remaining) == [9, 1, 2])
    }

    @Test("A shared limit keyed by tenant forgets the blocks of partitions whose windows are over")
    func blocksDoNotAccumulate() async throws {
        var policy = RateLimitPolicy(sharedLimit: .init(maxRequests: 10, per: .seconds(2)), currentDate: currentDate)
        policy.partition = { $0.value(forHTTPHeaderField: "X-Tenant") ?? "none" }
        let limiter = RateLimiter(policy, store: InMemoryRateLimitStore(currentDate: currentDate), clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport.ok,
            middleware: [.rateLimiting(limiter)]
        )
        func send(_ tenant: String) async throws {
            var request = URLRequest(url: url)
            request.setValue(tenant, forHTTPHeaderField: "X-Tenant")
            let tenantRequest = request
            _ = try await clock.run { try await client.send(tenantRequest) }
        }
        for tenant in 0..<1_100 { try await send("a\(tenant)") }
        #expect(limiter.shared?.block("a0") != nil)
        clock.advance(by: .seconds(3))
        for tenant in 0..<1_100 { try await send("b\(tenant)") }

        #expect(limiter.shared?.block("a0") == nil)
        #expect(limiter.shared?.block("b1099") != nil)
    }

    @Test("A replica sending one request at a time asks for blocks of 1, 2, 4, 8 slots and gives back what it left")
    func oneAtATimeGrowsBlocksAndGivesBack() async throws {
        let store = ReleasingRateLimitStore(currentDate: currentDate)
        let reservations = Locked<[Int]>([])
        let limiter = RateLimiter(
            RateLimitPolicy(
                sharedLimit: .init(maxRequests: 100, per: .seconds(2)),
                onEvent: { event in
                    if case .storeFailed = event { Issue.record("\(event)") }
                },
                currentDate: currentDate
            ),
            store: CountingReservations(store, reservations),
            clock: clock
        )
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in .ok },
            middleware: [.rateLimiting(limiter)]
        )
        // 12 requests, one at a time: 1 + 2 + 4 + 8 slots, so four round trips instead of twelve.
        for _ in 0..<12 {
            _ = try await client.send(URLRequest(url: url))
            clock.advance(by: .milliseconds(10))
        }
        #expect(reservations.withLock { $0 } == [1, 2, 4, 8])
        #expect(limiter.shared?.block(partition)?.left == 3)
        // Idle for a twentieth of the window (100 ms) since the last request: the 3 slots left go back, and the
        // next request starts again from a block of 1.
        clock.advance(by: .milliseconds(89))
        await Task.yield()
        #expect(store.released.withLock { $0 } == 0)
        clock.advance(by: .milliseconds(1))
        try await waitUntil { store.released.withLock { $0 } == 3 }
        #expect(limiter.shared?.block(partition)?.left == 0)
        _ = try await client.send(URLRequest(url: url))
        #expect(reservations.withLock { $0 } == [1, 2, 4, 8, 1])
    }

    @Test(
        "A store that lies about a reservation neither hangs a caller, nor spins on the store, nor lets more go than asked for",
        arguments: [
            (Int.max, 1e12, Int.min), (-5, Double.nan, -1), (Int.min, Double.infinity, 0), (3, -1e12, Int.max),
            (1_000, 0.0, 7), (0, -Double.infinity, 7),
        ]
    )
    func lyingStore(granted: Int, endsIn: Double, window: Int) async throws {
        let store = LyingRateLimitStore(granted: granted, endsIn: endsIn, window: window, currentDate: currentDate)
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 4, per: .seconds(2), blockSize: 4)
        let limiter = RateLimiter(
            RateLimitPolicy(sharedLimit: limit, maximumWait: nil, currentDate: currentDate),
            store: store,
            clock: clock
        )
        let sends = Locked<[Duration]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { [clock] _ in
                sends.withLock { $0.append(clock.now.offset) }
                return .ok
            },
            middleware: [.timeout(.seconds(3), clock: clock), .rateLimiting(limiter)]
        )
        let outcomes = try await clock.run {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        do {
                            _ = try await client.send(URLRequest(url: url))
                            return "sent"
                        } catch let error as CourierError {
                            return "\(error.code)"
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(outcomes.allSatisfy { $0 == "sent" || $0 == "timedOut" }, "\(outcomes)")
        #expect(clock.now.offset <= .seconds(3))
        #expect(sends.withLock { $0 }.allSatisfy { $0 <= .seconds(3) })
        // A window the store says ended is waited for a hundredth of a window, not spun on.
        #expect(store.calls.withLock { $0 } <= 6 * 3 * 100 / 2)
        // Never more than asked for: at most a block (4) per reservation.
        #expect(sends.withLock { $0.count } <= 4 * store.calls.withLock { $0 })
        let block = try #require(limiter.shared?.block(partition))
        #expect(block.inFlight == 0 && block.pending == 0 && block.waiters.isEmpty)
        #expect(limiter.state(for: partition)?.inFlight == 0)
    }
}
