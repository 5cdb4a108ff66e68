import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A store in memory whose reservations and releases take a while on the manual clock, whose releases may fail,
/// and which records every reservation granted and every release asked for.
private final class SlowReleasingStore: RateLimitStore {
    let inner: InMemoryRateLimitStore
    let clock: ManualClock
    let reservations = Locked<[RateLimitReservation]>([])
    /// Every release asked for, applied or not.
    let releases = Locked<[(count: Int, of: RateLimitReservation)]>([])
    /// How long each reservation and release takes, and whether a release fails.
    let reserveDelay: @Sendable () -> Duration
    let releaseDelay: @Sendable () -> Duration
    let releaseFails: @Sendable () -> Bool

    init(
        clock: ManualClock,
        currentDate: @escaping @Sendable () -> Date,
        reserveDelay: @escaping @Sendable () -> Duration = { .zero },
        releaseDelay: @escaping @Sendable () -> Duration = { .zero },
        releaseFails: @escaping @Sendable () -> Bool = { false }
    ) {
        inner = InMemoryRateLimitStore(currentDate: currentDate)
        self.clock = clock
        (self.reserveDelay, self.releaseDelay, self.releaseFails) = (reserveDelay, releaseDelay, releaseFails)
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
        let delay = reserveDelay()
        if delay > .zero { try await clock.sleep(for: delay) }
        let reservation = await inner.reserve(count, in: partition, limit: limit, window: window)
        reservations.withLock { $0.append(reservation) }
        return reservation
    }

    func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        releases.withLock { $0.append((count, reservation)) }
        let delay = releaseDelay()
        if delay > .zero { try await clock.sleep(for: delay) }
        if releaseFails() { throw URLError(.cannotConnectToHost) }
        await inner.release(count, of: reservation)
    }
}

/// A store that grants whatever it likes, for the paths that give slots back.
private final class GrantingStore: RateLimitStore {
    let granted: Int
    let currentDate: @Sendable () -> Date
    let asked = Locked<[Int]>([])
    let released = Locked<[Int]>([])

    init(granted: Int, currentDate: @escaping @Sendable () -> Date) {
        (self.granted, self.currentDate) = (granted, currentDate)
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
        asked.withLock { $0.append(count) }
        return RateLimitReservation(
            partition: partition,
            granted: granted,
            windowEndsAt: currentDate().addingTimeInterval(window.timeInterval),
            window: 1
        )
    }

    func release(_ count: Int, of reservation: RateLimitReservation) async throws {
        released.withLock { $0.append(count) }
    }
}

/// A store in memory whose releases never answer.
private final class HangingReleaseStore: RateLimitStore {
    let inner: InMemoryRateLimitStore
    let never = Gate()
    let releases = Locked<[Int]>([])

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
        releases.withLock { $0.append(count) }
        await never.wait()
    }
}

/// A review of the shared quota's wait loop and its give-back of unused slots, by someone who did not write them.
@Suite("A shared quota under review: the wait loop and giving slots back", .timeLimit(.minutes(1)))
struct SharedQuotaReviewTests {
    private let clock = ManualClock()
    private static let epoch = Date(timeIntervalSinceReferenceDate: 0)
    private let url = URL(string: "https://api.example.test/items")!
    private let partition = "api.example.test:443"

    private var currentDate: @Sendable () -> Date {
        { [clock] in Self.epoch.addingTimeInterval(clock.now.offset.timeInterval) }
    }

    /// How a call ended.
    private enum Outcome: Sendable, Equatable {
        case sent
        case rejected(CourierError.Code)
        case cancelled
        case other(String)
    }

    /// One request sent: when, by which replica, the call's arrival, and the end of the client window it went in.
    private struct Send: Sendable {
        let at: Duration
        let replica: Int
        let arrival: Duration
        let clientWindowEndsAt: Duration?
    }

    /// Sends `request` with `client`, cancelling the call at `cancelAt` if it has not ended.
    private static func call(
        _ client: Client,
        _ request: URLRequest,
        cancelAt: Duration?,
        clock: ManualClock
    ) async -> Outcome {
        await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do {
                    _ = try await client.send(request)
                    return .sent
                } catch let error as CourierError {
                    return .rejected(error.code)
                } catch is CancellationError {
                    return .cancelled
                } catch {
                    return .other(String(describing: error))
                }
            }
            if let cancelAt {
                group.addTask {
                    try? await clock.sleep(until: .init(offset: cancelAt))
                    return nil
                }
            }
            var outcome = Outcome.other("no outcome")
            for await next in group {
                group.cancelAll()
                if let next { outcome = next }
            }
            return outcome
        }
    }

    // One run of each seed checks the client windows too: the client-window check was a test of its own, running
    // the same 16 simulations again, while its finding was open (seed 6 sent 5 in a window of 4).
    @Test(
        "Seeded model: cancellations, deadlines, maximumWait, client limits, slow and failing releases on a grid that meets the give-back timers; never more than a client limit per client window",
        arguments: 0..<16
    )
    func seededModel(seed: UInt64) async throws {
        try await model(seed: seed)
    }

    // Eight seeds, not sixteen: these simulations run beside the PostgreSQL tests, whose stores time out in real
    // time. Seed 6 sent 7 in a client window of 4 before the fix.
    @Test(
        "Seeded model without cancellations, deadlines or maximumWait: never more than a client limit per client window",
        arguments: 0..<8
    )
    func calmModelClientWindows(seed: UInt64) async throws {
        try await model(seed: seed, calm: true)
    }

    /// The model: random replicas and limits, requests on a grid, some cancelled, some with a deadline.
    private func model(seed: UInt64, calm: Bool = false) async throws {
        var random = SplitMix64(seed: 0x5EED_0000 &+ seed)
        let replicaCount = Int.random(in: 2...4, using: &random)
        let maxRequests = Int.random(in: 2...12, using: &random)
        let window = Duration.milliseconds(Int64.random(in: 10...30, using: &random) * 100)
        let limit = RateLimitPolicy.SharedLimit(
            maxRequests: maxRequests,
            per: window,
            blockSize: Int.random(in: 1...maxRequests, using: &random)
        )
        let clientLimit =
            Bool.random(using: &random)
            ? RateLimitPolicy.ClientLimit(
                maxRequests: Int.random(in: 1...maxRequests, using: &random),
                per: .milliseconds(Int64.random(in: 2...20, using: &random) * 100)
            ) : nil
        let maximumWait =
            Bool.random(using: &random) && !calm
            ? Duration.milliseconds(Int64.random(in: 5...60, using: &random) * 100) : nil
        let storeTimeout = Duration.seconds(1)
        // The store's delays come from a generator of their own, under a lock.
        let storeRandom = Locked(SplitMix64(seed: 0xD00D &+ seed))
        let slowReleases = Bool.random(using: &random)
        let failingReleases = Bool.random(using: &random)
        let store = SlowReleasingStore(
            clock: clock,
            currentDate: currentDate,
            reserveDelay: {
                storeRandom.withLock { .milliseconds(Int64.random(in: 0...8, using: &$0) * 100) }
            },
            releaseDelay: {
                slowReleases
                    ? storeRandom.withLock { .milliseconds(Int64.random(in: 0...15, using: &$0) * 100) } : .zero
            },
            releaseFails: { failingReleases && storeRandom.withLock { Bool.random(using: &$0) } }
        )
        let sends = Locked<[Send]>([])
        let events = Locked<[RateLimitEvent]>([])
        let replicas = (0..<replicaCount).map { index -> (untimed: Client, timed: Client, limiter: RateLimiter) in
            var policy = RateLimitPolicy(
                clientLimit: clientLimit,
                sharedLimit: limit,
                maximumWait: maximumWait,
                onEvent: { event in events.withLock { $0.append(event) } },
                currentDate: currentDate
            )
            policy.storeTimeout = storeTimeout
            let limiter = RateLimiter(policy, store: store, clock: clock)
            let record = Middleware(name: "record") { [clock, partition] request, next in
                let arrival = Duration.milliseconds(Int64(request.value(forHTTPHeaderField: "X-Arrival") ?? "") ?? -1)
                let now = clock.now.offset
                let clientWindowEndsAt = limiter.state(for: partition)?.resetIn.map { now + $0 }
                sends.withLock {
                    $0.append(Send(at: now, replica: index, arrival: arrival, clientWindowEndsAt: clientWindowEndsAt))
                }
                return try await next(request)
            }
            let transport = MockTransport { _ in .ok }
            let base = URL(string: "https://api.example.test")!
            let untimed = Client(baseURL: base, transport: transport, middleware: [.rateLimiting(limiter), record])
            let timed = Client(
                baseURL: base,
                transport: transport,
                middleware: [.timeout(.seconds(3), clock: clock), .rateLimiting(limiter), record]
            )
            return (untimed, timed, limiter)
        }
        // Arrivals on a grid of a fortieth of the window, so that some meet a give-back timer (a twentieth after a
        // replica's last request ended) or a window's end at the same instant.
        let grid = window / 40
        struct Planned: Sendable {
            let replica: Int
            let arrival: Duration
            let timed: Bool
            let cancelAt: Duration?
        }
        let plan = replicas.indices.flatMap { index in
            (0..<Int.random(in: 0...(2 * maxRequests), using: &random)).map { _ -> Planned in
                let arrival = grid * Int.random(in: 0...160, using: &random)
                let cancelAt =
                    Int.random(in: 0..<5, using: &random) == 0 && !calm
                    ? arrival + grid * Int.random(in: 0...60, using: &random) : nil
                return Planned(
                    replica: index,
                    arrival: arrival,
                    timed: Bool.random(using: &random) && !calm,
                    cancelAt: cancelAt
                )
            }
        }
        let ended = try await clock.run {
            await withTaskGroup(of: (Planned, Outcome, Duration).self) { group in
                for planned in plan {
                    let client = planned.timed ? replicas[planned.replica].timed : replicas[planned.replica].untimed
                    group.addTask {
                        try? await clock.sleep(until: .init(offset: planned.arrival))
                        var request = URLRequest(url: url)
                        let milliseconds = planned.arrival / .milliseconds(1)
                        request.setValue("\(Int64(milliseconds))", forHTTPHeaderField: "X-Arrival")
                        let outcome = await Self.call(client, request, cancelAt: planned.cancelAt, clock: clock)
                        return (planned, outcome, clock.now.offset)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let context = "seed \(seed)"
        #expect(ended.count == plan.count, "\(context)")
        for (planned, outcome, end) in ended {
            switch outcome {
            case .sent, .cancelled, .rejected(.rateLimited), .rejected(.timedOut): break
            default: Issue.record("\(context): a call ended with \(outcome)")
            }
            if let cancelAt = planned.cancelAt {
                #expect(
                    end <= max(cancelAt, planned.arrival),
                    "\(context): a call cancelled at \(cancelAt) ended at \(end)"
                )
            }
            if planned.timed {
                #expect(end <= planned.arrival + .seconds(3), "\(context): a call ended past its deadline at \(end)")
            }
            if let maximumWait, case .rejected(.rateLimited) = outcome {
                #expect(end - planned.arrival <= maximumWait, "\(context): rejected after \(end - planned.arrival)")
            }
        }
        let sent = sends.withLock { $0 }
        #expect(sent.count == ended.filter { $0.1 == .sent }.count, "\(context)")
        for send in sent {
            if let maximumWait {
                #expect(
                    send.at - send.arrival <= maximumWait,
                    "\(context): sent \(send.at - send.arrival) after arrival"
                )
            }
        }
        let fromStore = store.reservations.withLock { $0 }
        let released = store.releases.withLock { $0 }
        // A release that failed or took longer than the store timeout reports storeFailed, and nothing goes
        // without a shared slot for that (only a failed reservation bypasses the store).
        let perWindow = checkWindows(sent, fromStore, limit, context: context)
        var granted: [Int: Int] = [:]
        for reservation in fromStore { granted[reservation.window, default: 0] += reservation.granted }
        var givenBack: [Int: Int] = [:]
        for release in released {
            #expect(release.count > 0, "\(context): a release of \(release.count)")
            givenBack[release.of.window, default: 0] += release.count
        }
        // A slot is sent with or given back, never both, never given back twice.
        for (number, total) in granted {
            let used = perWindow[number, default: 0] + givenBack[number, default: 0]
            #expect(used <= total, "\(context): window \(number): \(used) slots sent or given back of \(total)")
        }
        if let clientLimit {
            let byWindow = Dictionary(grouping: sent) { "\($0.replica)@\(String(describing: $0.clientWindowEndsAt))" }
            for (key, group) in byWindow {
                #expect(
                    group.count <= clientLimit.maxRequests,
                    "\(context): \(group.count) sent in client window \(key)"
                )
            }
        }
        for (_, _, limiter) in replicas {
            if let block = limiter.shared?.block(partition) {
                #expect(block.inFlight == 0, "\(context): inFlight \(block.inFlight)")
                #expect(block.pending == 0, "\(context): pending \(block.pending)")
                #expect(block.waiters.isEmpty, "\(context)")
            }
            if let state = limiter.state(for: partition) {
                #expect(state.inFlight == 0 && state.waiting == 0, "\(context): limiter \(state)")
            }
        }
    }

    /// Checks the sends against the store's windows (as `SharedLimitTests` does): none in a margin, at most
    /// `maxRequests` per window. Returns the sends per window.
    private func checkWindows(
        _ sends: [Send],
        _ reservations: [RateLimitReservation],
        _ limit: RateLimitPolicy.SharedLimit,
        context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Int: Int] {
        let length = limit.window + limit.margin
        var windows: [Int: Duration] = [:]
        for reservation in reservations {
            let endsAt = Duration.seconds(reservation.windowEndsAt.timeIntervalSince(Self.epoch))
            windows[reservation.window] = endsAt - length - .microseconds(1)
        }
        var counts: [Int: Int] = [:]
        for send in sends {
            let window = windows.filter { $0.value <= send.at }.max { $0.value < $1.value }
            guard let (number, start) = window else {
                Issue.record("\(context): a request at \(send.at) before any window", sourceLocation: sourceLocation)
                continue
            }
            #expect(
                send.at <= start + limit.window + .microseconds(2),
                "\(context): a request at \(send.at) in window \(number)'s margin",
                sourceLocation: sourceLocation
            )
            counts[number, default: 0] += 1
        }
        for (number, count) in counts {
            #expect(
                count <= limit.maxRequests,
                "\(context): window \(number): \(count) requests",
                sourceLocation: sourceLocation
            )
        }
        return counts
    }

    /// A replica with a client limit of 2 per 10 s and a fleet limit of 1 per 2 s; `plan` is each call's arrival and
    /// when it is cancelled. Returns each call's outcome and end, the number sent, and the limiter.
    private func fleetAndClient(
        _ plan: [(arrival: Duration, cancelAt: Duration?)]
    ) async throws -> ([(Outcome, Duration)], Int, RateLimiter) {
        let store = SlowReleasingStore(clock: clock, currentDate: currentDate)
        let limiter = RateLimiter(
            RateLimitPolicy(
                clientLimit: .init(maxRequests: 2, per: .seconds(10)),
                sharedLimit: .init(maxRequests: 1, per: .seconds(2)),
                currentDate: currentDate
            ),
            store: store,
            clock: clock
        )
        let sent = Locked(0)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in
                sent.withLock { $0 += 1 }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        let (clock, url) = (clock, url)
        let ended = try await clock.run {
            await withTaskGroup(of: (Int, Outcome, Duration).self) { group in
                for (index, call) in plan.enumerated() {
                    group.addTask {
                        try? await clock.sleep(until: .init(offset: call.arrival))
                        let outcome = await Self.call(
                            client,
                            URLRequest(url: url),
                            cancelAt: call.cancelAt,
                            clock: clock
                        )
                        return (index, outcome, clock.now.offset)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let outcomes = ended.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        return (outcomes, sent.withLock { $0 }, limiter)
    }

    private func expectNothingHeld(_ limiter: RateLimiter, sourceLocation: SourceLocation = #_sourceLocation) {
        let block = limiter.shared?.block(partition)
        #expect(block?.pending == 0 && block?.inFlight == 0, sourceLocation: sourceLocation)
        #expect(block?.waiters.isEmpty == true, sourceLocation: sourceLocation)
        #expect(limiter.state(for: partition)?.inFlight == 0, sourceLocation: sourceLocation)
        #expect(limiter.state(for: partition)?.waiting == 0, sourceLocation: sourceLocation)
    }

    @Test(
        "Cancelled while it sleeps for the fleet's next window: CancellationError at once, no count left, nothing sent"
    )
    func cancelledDuringTheSleep() async throws {
        let (outcomes, sent, limiter) = try await fleetAndClient([
            (.zero, nil), (.milliseconds(100), .seconds(1)),
        ])
        #expect(outcomes[0].0 == .sent)
        // It slept until the fleet's next window at 2.1 s, holding no client slot; cancelled at 1 s.
        #expect(outcomes[1].0 == .cancelled && outcomes[1].1 == .seconds(1))
        #expect(sent == 1)
        expectNothingHeld(limiter)
        // The client slot it gave back is there for the next window's request.
        #expect(limiter.state(for: partition)?.remaining == 1)
    }

    @Test("Cancelled while it asks the limiter again after the fleet's window opened: no count left, nothing sent")
    func cancelledDuringTheReacquire() async throws {
        // Two sleep for the fleet's window at 2.1 s; each gave its client slot back. Then the client window (2 per
        // 10 s) has one slot: one goes, the other waits in the limiter until 10 s and is cancelled at 3 s.
        let (outcomes, sent, limiter) = try await fleetAndClient([
            (.zero, nil), (.milliseconds(100), .seconds(3)), (.seconds(1), .seconds(3)),
        ])
        #expect(outcomes[0].0 == .sent)
        let later = outcomes.dropFirst().sorted { $0.1 < $1.1 }
        #expect(later.map(\.0) == [.sent, .cancelled])
        // The fleet's window opens at 2.1 s (less a rounding of the store's Date).
        #expect(later.count == 2 && later[0].1 > .milliseconds(2_099) && later[0].1 < .milliseconds(2_101))
        #expect(later.last?.1 == .seconds(3))
        #expect(sent == 2)
        expectNothingHeld(limiter)
    }

    // Finding (fixed): the slot taken in the client window that ended went back to the next one
    // (RateLimitStateMachine.returnUnused added to `remaining` whatever the ticket's epoch): two sent 0.3 s apart
    // under 1 per second.
    @Test(
        "A request cancelled while it waits for a reservation gives its client slot back to its own client window only"
    )
    func staleClientSlotGivenBack() async throws {
        // The first reservation takes 1.5 s; the others none.
        let reservations = Locked(0)
        let store = SlowReleasingStore(
            clock: clock,
            currentDate: currentDate,
            reserveDelay: {
                reservations.withLock { count in
                    count += 1
                    return count == 1 ? .milliseconds(1_500) : .zero
                }
            }
        )
        var policy = RateLimitPolicy(
            clientLimit: .init(maxRequests: 1, per: .seconds(1)),
            sharedLimit: .init(maxRequests: 10, per: .seconds(10)),
            currentDate: currentDate
        )
        policy.storeTimeout = .seconds(5)
        let limiter = RateLimiter(policy, store: store, clock: clock)
        let sends = Locked<[Duration]>([])
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { [clock] _ in
                sends.withLock { $0.append(clock.now.offset) }
                return .ok
            },
            middleware: [.rateLimiting(limiter)]
        )
        // 1: takes the client window [0, 1) and waits for the reservation until 1.5 s; cancelled at 1.3 s.
        // 2: takes the client window that starts at 1.2 s. 3: at 1.4 s, must wait for that window's end at 2.2 s.
        let plan: [(Duration, Duration?)] = [
            (.zero, .milliseconds(1_300)), (.milliseconds(1_200), nil), (.milliseconds(1_400), nil),
        ]
        let (clock, url) = (clock, url)
        let outcomes = try await clock.run {
            await withTaskGroup(of: Outcome.self) { group in
                for (arrival, cancelAt) in plan {
                    group.addTask {
                        try? await clock.sleep(until: .init(offset: arrival))
                        return await Self.call(client, URLRequest(url: url), cancelAt: cancelAt, clock: clock)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(outcomes.filter { $0 == .cancelled }.count == 1)
        let sent = sends.withLock { $0 }.sorted()
        #expect(sent.count == 2)
        // Before the fix: sent at 1.5 s and 1.5 s, both in the client window [1.2 s, 2.2 s). Now the second waits for
        // that window's end (the first was held by the reservation until 1.5 s).
        #expect(sent.count == 2 && sent[1] >= .milliseconds(2_200), "sent at \(sent)")
        expectNothingHeld(limiter)
    }

    /// A replica with a client limit of 1 per second and a fleet limit of 10 per 10 s whose first reservation takes
    /// 1.5 s. Request 1 arrives at 0 and takes the client window [0, 1 s); request 2 arrives at 1.2 s and takes the
    /// client window [1.2 s, 2.2 s); both wait for the reservation until 1.5 s. Request 1's call has `timeout` and
    /// is cancelled at `cancelAt`, when given. Returns each request's outcome and end, each send (when, and the end
    /// of the client window it went in), and the limiter.
    private func outlivedClientWindow(
        maximumWait: Duration? = nil,
        timeout: Duration? = nil,
        cancelAt: Duration? = nil
    ) async throws -> (outcomes: [(Outcome, Duration)], sent: [(at: Duration, windowEndsAt: Duration?)], RateLimiter) {
        // The first reservation takes 1.5 s; the others none.
        let reservations = Locked(0)
        let store = SlowReleasingStore(
            clock: clock,
            currentDate: currentDate,
            reserveDelay: {
                reservations.withLock { count in
                    count += 1
                    return count == 1 ? .milliseconds(1_500) : .zero
                }
            }
        )
        var policy = RateLimitPolicy(
            clientLimit: .init(maxRequests: 1, per: .seconds(1)),
            sharedLimit: .init(maxRequests: 10, per: .seconds(10)),
            maximumWait: maximumWait,
            currentDate: currentDate
        )
        policy.storeTimeout = .seconds(5)
        let limiter = RateLimiter(policy, store: store, clock: clock)
        let sends = Locked<[(at: Duration, windowEndsAt: Duration?)]>([])
        let transport = MockTransport { [clock, partition] _ in
            let now = clock.now.offset
            let windowEndsAt = limiter.state(for: partition)?.resetIn.map { now + $0 }
            sends.withLock { $0.append((now, windowEndsAt)) }
            return .ok
        }
        let base = URL(string: "https://api.example.test")!
        var middleware: [Middleware] = [.rateLimiting(limiter)]
        if let timeout { middleware.insert(.timeout(timeout, clock: clock), at: 0) }
        let first = Client(baseURL: base, transport: transport, middleware: middleware)
        let second = Client(baseURL: base, transport: transport, middleware: [.rateLimiting(limiter)])
        let plan = [(first, Duration.zero, cancelAt), (second, .milliseconds(1_200), nil)]
        let (clock, url) = (clock, url)
        let ended = try await clock.run {
            await withTaskGroup(of: (Int, Outcome, Duration).self) { group in
                for (index, (client, arrival, cancelAt)) in plan.enumerated() {
                    group.addTask {
                        try? await clock.sleep(until: .init(offset: arrival))
                        let outcome = await Self.call(client, URLRequest(url: url), cancelAt: cancelAt, clock: clock)
                        return (index, outcome, clock.now.offset)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let outcomes = ended.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        return (outcomes, sends.withLock { $0 }.sorted { $0.at < $1.at }, limiter)
    }

    // Finding (fixed): request 1 held its client slot of [0, 1 s) while it waited for the store and was sent at 1.5 s
    // beside request 2, in the client window [1.2 s, 2.2 s): two sent at once under 1 per second.
    @Test(
        "A client slot taken before a slow reservation is not sent in the next client window beside that window's own"
    )
    func clientSlotSentInTheNextWindow() async throws {
        let (outcomes, sent, limiter) = try await outlivedClientWindow()
        #expect(outcomes.map(\.0) == [.sent, .sent])
        // Request 2 goes at 1.5 s in its window [1.2 s, 2.2 s). Request 1's slot of [0, 1 s) goes to no one (given to
        // [1.2 s, 2.2 s), request 1 would take it and go at 1.5 s too): it waits for the next window, from 2.2 s.
        #expect(sent.map(\.at) == [.milliseconds(1_500), .milliseconds(2_200)], "sent at \(sent)")
        #expect(sent.map(\.windowEndsAt) == [.milliseconds(2_200), .milliseconds(3_200)], "sent at \(sent)")
        expectNothingHeld(limiter)
    }

    /// How request 1 of ``outlivedClientWindow(maximumWait:timeout:cancelAt:)`` ends its wait for a slot of the
    /// current client window, which opens at 2.2 s.
    enum OutlivedBound: String, CaseIterable, CustomTestStringConvertible {
        case maximumWait, deadline, cancellation
        var testDescription: String { rawValue }
    }

    @Test(
        "A request whose reservation outlived its client window waits for the current one within maximumWait, its deadline and its cancellation",
        arguments: OutlivedBound.allCases
    )
    func outlivedClientWindowBounds(bound: OutlivedBound) async throws {
        // From its arrival at 0, the slot at 2.2 s is past the maximum wait or the deadline: refused at 1.5 s, when
        // its reservation ends.
        let run: (outcomes: [(Outcome, Duration)], sent: [(at: Duration, windowEndsAt: Duration?)], RateLimiter)
        let expected: (Outcome, Duration)
        switch bound {
        case .maximumWait:
            run = try await outlivedClientWindow(maximumWait: .seconds(2))
            expected = (.rejected(.rateLimited), .milliseconds(1_500))
        case .deadline:
            run = try await outlivedClientWindow(timeout: .seconds(2))
            expected = (.rejected(.timedOut), .milliseconds(1_500))
        case .cancellation:
            run = try await outlivedClientWindow(cancelAt: .milliseconds(1_800))
            expected = (.cancelled, .milliseconds(1_800))
        }
        let (outcomes, sent, limiter) = run
        #expect(outcomes.count == 2 && outcomes[0] == expected, "\(outcomes)")
        #expect(outcomes.count == 2 && outcomes[1].0 == .sent)
        #expect(sent.map(\.at) == [.milliseconds(1_500)], "sent at \(sent)")
        expectNothingHeld(limiter)
    }

    @Test(
        "A request of the same replica and two of another arrive as the give-back fires: never over the window, no slot both sent and given back",
        arguments: 0..<12
    )
    func giveBackRace(round: Int) async throws {
        let store = SlowReleasingStore(clock: clock, currentDate: currentDate)
        let limit = RateLimitPolicy.SharedLimit(maxRequests: 4, per: .seconds(2), blockSize: 4)
        let sends = Locked<[Send]>([])
        let (clock, url) = (clock, url)
        let clients = (0..<2).map { index in
            let limiter = RateLimiter(
                RateLimitPolicy(sharedLimit: limit, currentDate: currentDate),
                store: store,
                clock: clock
            )
            let client = Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: MockTransport { [clock] _ in
                    sends.withLock {
                        $0.append(Send(at: clock.now.offset, replica: index, arrival: .zero, clientWindowEndsAt: nil))
                    }
                    return .ok
                },
                middleware: [.rateLimiting(limiter)]
            )
            return (client, limiter)
        }
        // Replica 0 sends two one after the other (blocks of 1 and 2: one slot left, given back at 0.1 s); at 0.1 s
        // it sends one more and replica 1 two, in an order that varies with the round.
        let late = [(0, round % 3), (1, (round + 1) % 3), (1, (round + 2) % 3)]
        try await clock.run {
            _ = try await clients[0].0.send(URLRequest(url: url))
            _ = try await clients[0].0.send(URLRequest(url: url))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (replica, order) in late {
                    group.addTask {
                        try await clock.sleep(until: .init(offset: .milliseconds(100)))
                        for _ in 0..<order { await Task.yield() }
                        _ = try await clients[replica].0.send(URLRequest(url: url))
                    }
                }
                try await group.waitForAll()
            }
        }
        let sent = sends.withLock { $0 }
        #expect(sent.count == 5)
        let reservations = store.reservations.withLock { $0 }
        let perWindow = checkWindows(sent, reservations, limit, context: "round \(round)")
        var granted: [Int: Int] = [:]
        for reservation in reservations { granted[reservation.window, default: 0] += reservation.granted }
        var givenBack: [Int: Int] = [:]
        for release in store.releases.withLock({ $0 }) { givenBack[release.of.window, default: 0] += release.count }
        for (number, total) in granted {
            #expect(perWindow[number, default: 0] + givenBack[number, default: 0] <= total, "round \(round)")
        }
        for (_, limiter) in clients {
            let block = limiter.shared?.block(partition)
            #expect(block?.pending == 0 && block?.inFlight == 0)
        }
    }

    @Test("A release that never answers: storeFailed after the store timeout, and the replica goes on sending")
    func releaseHangs() async throws {
        let store = HangingReleaseStore(currentDate: currentDate)
        let events = Locked<[RateLimitEvent]>([])
        var policy = RateLimitPolicy(
            sharedLimit: .init(maxRequests: 10, per: .seconds(2), blockSize: 10),
            onEvent: { event in events.withLock { $0.append(event) } },
            currentDate: currentDate
        )
        policy.storeTimeout = .milliseconds(500)
        let limiter = RateLimiter(policy, store: store, clock: clock)
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in .ok },
            middleware: [.rateLimiting(limiter)]
        )
        let (clock, url) = (clock, url)
        let statuses = try await clock.run {
            var statuses: [Int] = []
            for _ in 0..<2 { statuses.append(try await client.send(URLRequest(url: url)).1.statusCode) }
            // The slot left goes back at 0.1 s, and the store never answers.
            try await clock.sleep(for: .seconds(1))
            for _ in 0..<3 { statuses.append(try await client.send(URLRequest(url: url)).1.statusCode) }
            return statuses
        }
        #expect(statuses == [200, 200, 200, 200, 200])
        #expect(store.releases.withLock { $0 }.first == 1)
        #expect(events.withLock { $0 }.contains { if case .storeFailed = $0 { true } else { false } })
        let block = try #require(limiter.shared?.block(partition))
        #expect(block.pending == 0 && block.inFlight == 0 && block.waiters.isEmpty)
        #expect(clock.now.offset == .seconds(1))
    }

    @Test("A limiter dropped while its give-back task sleeps is freed, and the task gives nothing back")
    func limiterFreedWhileGivingBack() async throws {
        let store = SlowReleasingStore(clock: clock, currentDate: currentDate)
        weak var weakLimiter: RateLimiter?
        do {
            let limiter = RateLimiter(
                RateLimitPolicy(
                    sharedLimit: .init(maxRequests: 10, per: .seconds(2), blockSize: 10),
                    currentDate: currentDate
                ),
                store: store,
                clock: clock
            )
            weakLimiter = limiter
            let client = Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: MockTransport { _ in .ok },
                middleware: [.rateLimiting(limiter)]
            )
            // Two requests one after the other: the second block holds 2 slots, one is left.
            _ = try await client.send(URLRequest(url: url))
            _ = try await client.send(URLRequest(url: url))
            #expect(limiter.shared?.block(partition)?.left == 1)
            #expect(limiter.shared?.block(partition)?.givingBack == true)
        }
        await clock.waitForSleepers(count: 1)
        #expect(weakLimiter == nil)
        clock.advance(by: .seconds(1))
        for _ in 0..<50 { await Task.yield() }
        #expect(store.releases.withLock { $0.isEmpty })
    }

    @Test("A store that grants more than asked never has more given back than the replica asked for")
    func hugeGrantGivesBackAtMostTheAsk() async throws {
        let store = GrantingStore(granted: .max, currentDate: currentDate)
        let limiter = RateLimiter(
            RateLimitPolicy(
                sharedLimit: .init(maxRequests: .max, per: .seconds(2), blockSize: .max),
                currentDate: currentDate
            ),
            store: store,
            clock: clock
        )
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in .ok },
            middleware: [.rateLimiting(limiter)]
        )
        try await clock.run {
            for _ in 0..<4 { _ = try await client.send(URLRequest(url: url)) }
            // Idle past a twentieth of the window: the slots left go back.
            try await clock.sleep(for: .seconds(1))
        }
        let asked = store.asked.withLock { $0 }
        #expect(asked == [1, 2, 4])
        let released = store.released.withLock { $0 }
        // The last block: 4 asked, 4 granted (of Int.max), 1 used.
        #expect(released == [3])
    }

    @Test("A store that grants nothing or a negative number: nothing to give back, and the request waits or fails")
    func negativeGrantGivesNothingBack() async throws {
        let store = GrantingStore(granted: -5, currentDate: currentDate)
        let limiter = RateLimiter(
            RateLimitPolicy(
                sharedLimit: .init(maxRequests: 10, per: .seconds(2)),
                maximumWait: .seconds(1),
                currentDate: currentDate
            ),
            store: store,
            clock: clock
        )
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: MockTransport { _ in .ok },
            middleware: [.rateLimiting(limiter)]
        )
        await #expect {
            try await clock.run { try await client.send(URLRequest(url: url)) }
        } throws: { error in
            (error as? CourierError)?.code == .rateLimited
        }
        #expect(store.released.withLock { $0.isEmpty })
        let block = try #require(limiter.shared?.block(partition))
        #expect(block.left == 0 && block.pending == 0 && block.inFlight == 0)
    }

    @Test(
        "The block asked for never overflows: twice a huge count taken is the block size",
        arguments: [1, 7, Int.max]
    )
    func blockToAskOverflow(blockSize: Int) {
        let limit = RateLimitPolicy.SharedLimit(maxRequests: .max, per: .seconds(1), blockSize: blockSize)
        var block = SharedQuota.Block()
        for taken in [0, 1, Int.max / 2, Int.max / 2 + 1, Int.max] {
            block.taken = taken
            block.pending = 1
            let ask = SharedQuota.blockToAsk(block, limit)
            #expect(ask >= 1 && ask <= blockSize)
        }
    }
}
