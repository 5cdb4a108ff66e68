import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``RateLimitStore`` in memory that records every reservation it grants and counts the calls, and can be
/// made to fail or to hang.
final class RecordingRateLimitStore: RateLimitStore {
    enum Mode: Sendable { case normal, failing, hanging, hangingReservations }

    let inner: InMemoryRateLimitStore
    let reservations = Locked<[RateLimitReservation]>([])
    /// Slots given back, with the reservation they came from.
    let releases = Locked<[(count: Int, of: RateLimitReservation)]>([])
    let mode = Locked(Mode.normal)
    /// Opened when a reservation is first asked for.
    let reserving = Gate()

    init(currentDate: @escaping @Sendable () -> Date) {
        inner = InMemoryRateLimitStore(currentDate: currentDate)
    }

    let recorded = Locked<[RateLimitQuota]>([])

    private func obey(reserving: Bool = false) async throws {
        switch mode.withLock({ $0 }) {
        case .failing: throw URLError(.cannotConnectToHost)
        case .hanging: try await Task.sleep(for: .seconds(3600))
        case .hangingReservations where reserving: try await Task.sleep(for: .seconds(3600))
        case .normal, .hangingReservations: break
        }
    }

    func quota(for partition: String) async throws -> RateLimitQuota? {
        try await obey()
        return recorded.withLock { $0.last }
    }

    func record(_ quota: RateLimitQuota, for partition: String) async throws {
        try await obey()
        recorded.withLock { $0.append(quota) }
    }

    func reserve(
        _ count: Int,
        in partition: String,
        limit: Int,
        window: Duration
    ) async throws
        -> RateLimitReservation
    {
        reserving.open()
        try await obey(reserving: true)
        let reservation = await inner.reserve(count, in: partition, limit: limit, window: window)
        reservations.withLock { $0.append(reservation) }
        return reservation
    }

    func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        try await obey(reserving: true)
        releases.withLock { $0.append((count, reservation)) }
        await inner.release(count, of: reservation)
    }
}

@Suite("A shared limit: replicas take blocks of one fleet-wide window from the store", .timeLimit(.minutes(1)))
struct SharedLimitTests {
    private let clock = ManualClock()
    private static let epoch = Date(timeIntervalSinceReferenceDate: 0)
    private let url = URL(string: "https://api.example.test/items")!
    private let partition = "api.example.test:443"

    /// The wall clock of the store and the policies: the manual clock's time after a fixed date.
    private var currentDate: @Sendable () -> Date {
        { [clock] in Self.epoch.addingTimeInterval(clock.now.offset.timeInterval) }
    }

    /// A server that records when each request came, on the manual clock, and by which replica.
    private final class Origin: Sendable {
        let sends = Locked<[(at: Duration, replica: Int)]>([])
        func transport(_ replica: Int, clock: ManualClock) -> MockTransport {
            MockTransport { [sends] _ in
                sends.withLock { $0.append((at: clock.now.offset, replica: replica)) }
                return .ok
            }
        }
    }

    private func replica(
        _ index: Int,
        store: RecordingRateLimitStore,
        origin: Origin,
        limit: RateLimitPolicy.SharedLimit,
        events: Locked<[RateLimitEvent]> = Locked([]),
        maximumWait: Duration? = nil,
        storeTimeout: Duration = .seconds(1),
        clientLimit: RateLimitPolicy.ClientLimit? = nil,
        clientWindows: Locked<[(replica: Int, endsAt: Duration)]>? = nil
    ) -> (Client, RateLimiter) {
        var policy = RateLimitPolicy(
            clientLimit: clientLimit,
            sharedLimit: limit,
            maximumWait: maximumWait,
            onEvent: { event in events.withLock { $0.append(event) } },
            currentDate: currentDate
        )
        policy.storeTimeout = storeTimeout
        let limiter = RateLimiter(policy, store: store, clock: clock)
        // Inside the limiter, as a request is sent: the end of the client limit's window it is sent in.
        let clientWindow = Middleware(name: "clientWindow") { [clock, partition] request, next in
            if let clientWindows, let resetIn = limiter.state(for: partition)?.resetIn {
                clientWindows.withLock { $0.append((index, clock.now.offset + resetIn)) }
            }
            return try await next(request)
        }
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: origin.transport(index, clock: clock),
            middleware: [.rateLimiting(limiter), clientWindow]
        )
        return (client, limiter)
    }

    /// Checks what the fleet sent against the windows the store opened: every request inside the first
    /// `window` of a window (never in its margin), and at most `maxRequests` per window. Returns the requests
    /// sent per window.
    private func checkWindows(
        _ sends: [(at: Duration, replica: Int)],
        _ reservations: [RateLimitReservation],
        _ limit: RateLimitPolicy.SharedLimit,
        releases: [(count: Int, of: RateLimitReservation)] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Int: Int] {
        let length = limit.window + limit.margin
        var windows: [Int: Duration] = [:]  // window number → start, on the manual clock
        for reservation in reservations {
            let endsAt = Duration.seconds(reservation.windowEndsAt.timeIntervalSince(Self.epoch))
            // A microsecond early: the store's Date is a binary fraction of a second.
            windows[reservation.window] = endsAt - length - .microseconds(1)
        }
        var counts: [Int: Int] = [:]
        for send in sends {
            let window = windows.filter { $0.value <= send.at }.max { $0.value < $1.value }
            guard let (number, start) = window else {
                Issue.record("a request at \(send.at) before any window", sourceLocation: sourceLocation)
                continue
            }
            #expect(
                send.at <= start + limit.window + .microseconds(2),
                "a request in window \(number)'s margin",
                sourceLocation: sourceLocation
            )
            counts[number, default: 0] += 1
        }
        for (number, count) in counts {
            #expect(count <= limit.maxRequests, "window \(number): \(count) requests", sourceLocation: sourceLocation)
        }
        var granted = Dictionary(grouping: reservations, by: \.window).mapValues { $0.reduce(0) { $0 + $1.granted } }
        for release in releases { granted[release.of.window, default: 0] -= release.count }
        for (number, total) in granted {
            #expect(
                total <= limit.maxRequests,
                "window \(number): \(total) slots granted and not given back",
                sourceLocation: sourceLocation
            )
        }
        return counts
    }

    @Test("4 replicas × 60 concurrent calls, 50 per 2 s for the fleet: full windows, never more, none in a margin")
    func fourReplicasFillWindows() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 50, per: .seconds(2), blockSize: 10)
        let replicas = (0..<4).map { replica($0, store: store, origin: origin, limit: limit) }
        let statuses = try await clock.run {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (client, _) in replicas {
                    for _ in 0..<60 {
                        group.addTask { try await client.send(URLRequest(url: url)).1.statusCode }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(statuses.count == 240 && statuses.allSatisfy { $0 == 200 })
        let counts = checkWindows(
            origin.sends.withLock { $0 },
            store.reservations.withLock { $0 },
            limit,
            releases: store.releases.withLock { $0 }
        )
        // 240 requests at 50 a window: five windows, the first four at least 90 % used (a replica may hold a slot
        // or two of a window it has no request left for, which the next window makes up), never more than 50.
        let perWindow = counts.sorted { $0.key < $1.key }.map(\.value)
        #expect(perWindow.count == 5 && perWindow.reduce(0, +) == 240, "\(perWindow)")
        #expect(perWindow.dropLast().allSatisfy { $0 >= 45 }, "\(perWindow)")
        // Blocks, not a round trip per request.
        #expect(store.reservations.withLock { $0.count } < 60)
        for (_, limiter) in replicas {
            let block = try #require(limiter.shared?.block(partition))
            #expect(block.inFlight == 0 && block.pending == 0 && block.waiters.isEmpty && !block.fetching)
        }
    }

    @Test("A request that finds a slot left in its replica's block never reaches the store")
    func slotInBlockNoRoundTrip() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 100, per: .seconds(2), blockSize: 20)
        let (client, _) = replica(0, store: store, origin: origin, limit: limit)
        // 20 at once take one block of 20 (the first asks for as many as are asking by then, up to 20).
        try await clock.run {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { _ = try await client.send(URLRequest(url: url)) } }
                try await group.waitForAll()
            }
        }
        let afterBurst = store.reservations.withLock { $0 }
        #expect(afterBurst.reduce(0) { $0 + $1.granted } >= 20)
        // Whatever is left of the blocks is used without a round trip.
        let left = afterBurst.reduce(0) { $0 + $1.granted } - 20
        for _ in 0..<left { _ = try await client.send(URLRequest(url: url)) }
        #expect(store.reservations.withLock { $0.count } == afterBurst.count)
        #expect(origin.sends.withLock { $0.count } == 20 + left)
    }

    @Test("A used-up window: the next request waits for the next one, after the margin")
    func waitsForNextWindow() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 3, per: .seconds(2), blockSize: 3)
        let (client, _) = replica(0, store: store, origin: origin, limit: limit)
        try await clock.run {
            for _ in 0..<4 { _ = try await client.send(URLRequest(url: url)) }
        }
        let times = origin.sends.withLock { $0.map { ($0.at / .milliseconds(1)).rounded() } }
        #expect(times == [0, 0, 0, 2_100])
    }

    @Test("The next window opens after the call's deadline: timedOut at once, nothing sent, nothing held")
    func deadlineBeforeNextWindow() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let events = Locked<[RateLimitEvent]>([])
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 1, per: .seconds(2))
        let (client, limiter) = replica(0, store: store, origin: origin, limit: limit, events: events)
        let timed = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: origin.transport(0, clock: clock),
            middleware: [.timeout(.seconds(1), clock: clock), .rateLimiting(limiter)]
        )
        try await clock.run { _ = try await client.send(URLRequest(url: url)) }
        await #expect {
            try await timed.send(URLRequest(url: url))
        } throws: { error in
            (error as? CourierError)?.code == .timedOut
        }
        #expect(clock.now.offset == .zero)
        #expect(origin.sends.withLock { $0.count } == 1)
        #expect(events.withLock { $0 }.contains(.rejected(partition: partition, reason: .deadline)))
        #expect(limiter.state(for: partition)?.inFlight == 0)
        #expect(limiter.shared?.block(partition)?.pending == 0)
    }

    @Test("The next window opens past maximumWait: rateLimited at once")
    func maximumWait() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 1, per: .seconds(2))
        let (client, _) = replica(0, store: store, origin: origin, limit: limit, maximumWait: .seconds(1))
        _ = try await client.send(URLRequest(url: url))
        await #expect {
            try await client.send(URLRequest(url: url))
        } throws: { error in
            (error as? CourierError)?.code == .rateLimited
        }
        #expect(origin.sends.withLock { $0.count } == 1)
    }

    @Test(
        "The store fails: a storeFailed event, requests go paced by the server alone for one window, then the store again"
    )
    func storeFails() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        store.mode.withLock { $0 = .failing }
        let origin = Origin()
        let events = Locked<[RateLimitEvent]>([])
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 2, per: .seconds(2))
        let (client, limiter) = replica(0, store: store, origin: origin, limit: limit, events: events)
        for _ in 0..<5 { _ = try await client.send(URLRequest(url: url)) }
        #expect(origin.sends.withLock { $0.count } == 5)
        let failures = events.withLock { $0 }.filter { if case .storeFailed = $0 { true } else { false } }
        #expect(failures.count == 1)
        #expect(failures.first?.description.contains("cannotConnectToHost") == true || failures.count == 1)
        // A window later the store answers again and paces.
        store.mode.withLock { $0 = .normal }
        clock.advance(by: limit.window)
        try await clock.run {
            for _ in 0..<3 { _ = try await client.send(URLRequest(url: url)) }
        }
        #expect(store.reservations.withLock { $0.count } >= 1)
        // In milliseconds: the store's window end is a Date, a binary fraction of a second.
        let lastTimes = origin.sends.withLock { $0.suffix(3).map { ($0.at / .milliseconds(1)).rounded() } }
        #expect(lastTimes == [2_000, 2_000, 4_100])
        #expect(limiter.shared?.block(partition)?.inFlight == 0)
    }

    @Test("The store hangs: a caller with a deadline shorter than the store timeout fails at its deadline, not later")
    func storeHangsPastDeadline() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        store.mode.withLock { $0 = .hanging }
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 10, per: .seconds(2))
        let (_, limiter) = replica(0, store: store, origin: origin, limit: limit, storeTimeout: .seconds(5))
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: origin.transport(0, clock: clock),
            middleware: [.timeout(.milliseconds(300), clock: clock), .rateLimiting(limiter)]
        )
        let outcome = try await clock.run {
            do {
                _ = try await client.send(URLRequest(url: url))
                return "sent"
            } catch let error as CourierError {
                return "\(error.code)"
            }
        }
        #expect(outcome == "timedOut")
        #expect(clock.now.offset == .milliseconds(300))
        #expect(origin.sends.withLock { $0.isEmpty })
        #expect(limiter.state(for: partition)?.inFlight == 0)
    }

    @Test("The store hangs: after the store timeout the request goes without a shared slot, with a storeFailed event")
    func storeHangsPastStoreTimeout() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        store.mode.withLock { $0 = .hanging }
        let origin = Origin()
        let events = Locked<[RateLimitEvent]>([])
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 10, per: .seconds(2))
        let (client, limiter) = replica(0, store: store, origin: origin, limit: limit, events: events)
        let status = try await clock.run { try await client.send(URLRequest(url: url)).1.statusCode }
        #expect(status == 200)
        // One timeout for the first read of the partition's quota, one for the reservation.
        #expect(clock.now.offset == .seconds(2))
        #expect(events.withLock { $0 }.contains { if case .storeFailed = $0 { true } else { false } })
        #expect(limiter.shared?.block(partition)?.inFlight == 0)
    }

    @Test("Cancelled while waiting for the store: CancellationError at once, the limiter's slot given back")
    func cancelledWhileWaiting() async throws {
        let store = RecordingRateLimitStore(currentDate: currentDate)
        store.mode.withLock { $0 = .hangingReservations }
        let origin = Origin()
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 10, per: .seconds(2))
        let (client, limiter) = replica(0, store: store, origin: origin, limit: limit)
        let task = Task { try await client.send(URLRequest(url: url)) }
        // The reservation is asked for once the request waits for it (the first read of the quota, before, has a
        // store timeout of its own that sleeps on the clock too), and its store timeout sleeps on the clock.
        await store.reserving.wait()
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.join() }
        #expect(origin.sends.withLock { $0.isEmpty })
        #expect(limiter.state(for: partition)?.inFlight == 0)
        #expect(limiter.shared?.block(partition)?.pending == 0)
    }

    @Test(
        "Seeded model: random replicas, limits, client limits, blocks and arrivals never exceed a window or send in a margin",
        arguments: 0..<12
    )
    func seededModel(seed: UInt64) async throws {
        var random = SplitMix64(seed: 0xC0FF_EE00 &+ seed)
        let replicaCount = Int.random(in: 2...6, using: &random)
        let maxRequests = Int.random(in: 3...30, using: &random)
        let limit = RateLimitPolicy.SharedLimit(
            maxRequests: maxRequests,
            per: .milliseconds(Int64.random(in: 500...3000, using: &random)),
            blockSize: Int.random(in: 1...maxRequests, using: &random)
        )
        // Half the seeds give every replica a client limit too: both bind, and each must be kept.
        let clientLimit =
            Bool.random(using: &random)
            ? RateLimitPolicy.ClientLimit(
                maxRequests: Int.random(in: 1...maxRequests, using: &random),
                per: .milliseconds(Int64.random(in: 200...2000, using: &random))
            ) : nil
        let clientWindows = Locked<[(replica: Int, endsAt: Duration)]>([])
        let store = RecordingRateLimitStore(currentDate: currentDate)
        let origin = Origin()
        let replicas = (0..<replicaCount).map {
            replica(
                $0,
                store: store,
                origin: origin,
                limit: limit,
                clientLimit: clientLimit,
                clientWindows: clientWindows
            )
        }
        // Each request arrives at a random time in the first 6 seconds.
        let plan = replicas.indices.flatMap { index in
            (0..<Int.random(in: 0...(2 * maxRequests), using: &random)).map { _ in
                (index, Duration.milliseconds(Int64.random(in: 0...6000, using: &random)))
            }
        }
        let statuses = try await clock.run {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, arrival) in plan {
                    let client = replicas[index].0
                    group.addTask {
                        try await clock.sleep(until: .init(offset: arrival))
                        return try await client.send(URLRequest(url: url)).1.statusCode
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(statuses.count == plan.count && statuses.allSatisfy { $0 == 200 }, "seed \(seed)")
        let sends = origin.sends.withLock { $0 }
        #expect(sends.count == plan.count)
        _ = checkWindows(sends, store.reservations.withLock { $0 }, limit, releases: store.releases.withLock { $0 })
        if let clientLimit {
            // Every replica's requests, by the client limit's window they were sent in.
            let perWindow = Dictionary(grouping: clientWindows.withLock { $0 }) { "\($0.replica)@\($0.endsAt)" }
            #expect(perWindow.values.map(\.count).reduce(0, +) == plan.count, "seed \(seed)")
            for (window, sent) in perWindow {
                #expect(sent.count <= clientLimit.maxRequests, "seed \(seed): \(sent.count) sent in \(window)")
            }
        }
        for (_, limiter) in replicas where !plan.isEmpty {
            if let block = limiter.shared?.block(partition) {
                #expect(block.inFlight == 0 && block.pending == 0 && block.waiters.isEmpty, "seed \(seed)")
            }
        }
    }
}

@Suite("A rate-limit store that hangs never holds a request past the store timeout", .timeLimit(.minutes(1)))
struct SlowRateLimitStoreTests {
    private let clock = ManualClock()

    @Test("The first request to a partition reads the stored quota for at most the store timeout, then goes")
    func quotaReadBounded() async throws {
        let store = RecordingRateLimitStore(currentDate: { Date() })
        store.mode.withLock { $0 = .hanging }
        let limiter = RateLimiter(RateLimitPolicy(), store: store, clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in .ok },
            middleware: [.rateLimiting(limiter)]
        )
        let status = try await clock.run {
            try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!)).1.statusCode
        }
        #expect(status == 200)
        #expect(clock.now.offset == .seconds(1))
    }

    @Test("A response whose fields changed the quota comes back without waiting for the store's write")
    func recordDoesNotDelayTheResponse() async throws {
        let store = RecordingRateLimitStore(currentDate: { Date() })
        let limiter = RateLimiter(RateLimitPolicy(), store: store, clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in
                .status(
                    200,
                    headers: ["X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "30"]
                )
            },
            middleware: [.rateLimiting(limiter)]
        )
        // The first read and write answer; then every call to the store hangs.
        _ = try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!))
        await limiter.storeWritesSettled()
        store.mode.withLock { $0 = .hanging }
        let started = ContinuousClock.now
        let status = try await client.send(URLRequest(url: URL(string: "https://api.example.test/a")!)).1.statusCode
        #expect(status == 200)
        // No clock moved: the response did not wait for the hanging write (its timer is on the manual clock).
        #expect(clock.now.offset == .zero)
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(store.recorded.withLock { $0.count } == 1)
    }
}
