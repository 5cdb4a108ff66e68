import CourierTesting
import Testing

@testable import Courier

/// A seeded simulation of one partition: callers arrive at random, some with deadlines, some cancel while they
/// wait; a server with fixed windows counts each request when it processes it (after a random latency) and
/// answers after another random latency, so responses cross window boundaries and come back out of order.
/// The machine is driven exactly as the limiter drives it, ticks included.
@Suite("RateLimitStateMachine model")
struct RateLimitModelTests {
    typealias Machine = RateLimitStateMachine<Int>

    private enum Event {
        /// `since`, when earlier than the arrival: the caller waited elsewhere first (for the fleet's window) and
        /// comes back with its first arrival, which its maximum wait counts from.
        case arrive(caller: Int, deadline: Duration?, since: Duration?)
        case cancel(caller: Int)
        case process(caller: Int, ticket: Machine.Ticket)
        case respond(ticket: Machine.Ticket, observation: RateLimitObservation)
        case tick
    }

    private enum Fate: Equatable {
        case waiting(id: Int)
        case sent(at: Duration)
        case refused(at: Duration, Machine.Rejection)
        case cancelled
    }

    /// The server: `limit` requests per `window`, windows starting at multiples of `window`.
    private struct Server {
        let limit: Int
        let window: Duration
        /// Whether the server says only how many requests are left (no limit, no reset) and, when it refuses one, when
        /// to try again: the machine then cannot tell when a waiter's slot opens, and only its ticks refuse the waiters
        /// whose maximum wait has passed. Such a server refuses requests the machine could not know to hold.
        var terse = false
        /// Whether the server sends no rate-limit fields at all (the client-side limit is all there is) and now and
        /// then refuses a request with a bare `503`, with or without a `Retry-After`.
        var silent = false
        var counts: [Int: Int] = [:]
        var refusals = 0

        mutating func process(at time: Duration) -> RateLimitObservation {
            let index = Int((time / window).rounded(.down))
            let end = window * (index + 1)
            let count = counts[index, default: 0]
            guard count < limit else {
                refusals += 1
                if terse { return RateLimitObservation(retryAfter: end - time, isThrottled: true) }
                return RateLimitObservation(
                    limit: limit,
                    remaining: 0,
                    reset: end - time,
                    window: window,
                    retryAfter: end - time,
                    isThrottled: true
                )
            }
            counts[index] = count + 1
            if terse { return RateLimitObservation(remaining: limit - count - 1) }
            return RateLimitObservation(limit: limit, remaining: limit - count - 1, reset: end - time, window: window)
        }
    }

    private struct Simulation {
        var random: SplitMix64
        var machine: Machine
        var server: Server
        var queue: [(time: Duration, order: Int, event: Event)] = []
        var order = 0
        var fates: [Int: Fate] = [:]
        var resumptions: [Int: Int] = [:]
        var now: Duration = .zero
        var violations: [String] = []
        /// When each request was handed its slot, and the holds bare refusals asked for (from their responses).
        var sendTimes: [Duration] = []
        var holds: [(from: Duration, until: Duration)] = []

        mutating func schedule(_ event: Event, at time: Duration) {
            order += 1
            queue.append((time, order, event))
        }

        mutating func milliseconds(_ range: ClosedRange<Int>) -> Duration {
            .milliseconds(range.lowerBound + Int(random.next() % UInt64(range.count)))
        }

        mutating func chance(_ probability: Double) -> Bool { random.nextUnitInterval() < probability }

        mutating func send(_ caller: Int, _ ticket: Machine.Ticket) {
            resumptions[caller, default: 0] += 1
            fates[caller] = .sent(at: now)
            if chance(0.03) {
                // Cancelled just as it was handed its slot: the middleware gives the slot back unused.
                carryOut(machine.returnUnused(ticket, now: now))
                return
            }
            sendTimes.append(now)
            schedule(.process(caller: caller, ticket: ticket), at: now + milliseconds(0...1_000))
        }

        mutating func carryOut(_ output: Machine.Output) {
            for (caller, ticket, _) in output.sends { send(caller, ticket) }
            for (caller, rejection) in output.rejections {
                resumptions[caller, default: 0] += 1
                fates[caller] = .refused(at: now, rejection)
            }
            if let tick = output.scheduleTick { schedule(.tick, at: tick) }
        }

        mutating func handle(_ event: Event) {
            switch event {
            case .arrive(let caller, let deadline, let since):
                switch machine.acquire(now: now, since: since, deadline: deadline) {
                case .send(let ticket):
                    fates[caller] = .waiting(id: -1)
                    send(caller, ticket)
                case .reject(let rejection):
                    fates[caller] = .refused(at: now, rejection)
                case .suspend(let id):
                    let waiting = machine.enqueue(
                        caller,
                        id: id,
                        now: now,
                        since: since,
                        deadline: deadline,
                        isCancelled: false
                    )
                    switch waiting {
                    case .send(let ticket):
                        fates[caller] = .waiting(id: id)
                        send(caller, ticket)
                    case .waiting(let tick):
                        fates[caller] = .waiting(id: id)
                        if let tick { schedule(.tick, at: tick) }
                    case .reject(let rejection):
                        fates[caller] = .refused(at: now, rejection)
                    case .cancelled:
                        violations.append("caller \(caller) cancelled without being cancelled")
                    }
                    if chance(0.1) { schedule(.cancel(caller: caller), at: now + milliseconds(0...20_000)) }
                }
            case .cancel(let caller):
                guard case .waiting(let id) = fates[caller] else { return }
                if let waiter = machine.cancel(id: id) {
                    if waiter != caller { violations.append("cancelling \(caller) returned \(waiter)") }
                    resumptions[caller, default: 0] += 1
                    fates[caller] = .cancelled
                }
            case .process(_, let ticket):
                let observation: RateLimitObservation
                if server.silent {
                    observation =
                        chance(0.05)
                        ? RateLimitObservation(
                            retryAfter: chance(0.5) ? milliseconds(0...3_000) : nil,
                            isThrottled: true
                        )
                        : RateLimitObservation()
                } else {
                    observation = server.process(at: now)
                }
                schedule(.respond(ticket: ticket, observation: observation), at: now + milliseconds(0...1_000))
            case .respond(let ticket, let observation):
                if server.silent, observation.isThrottled {
                    holds.append((now, now + (observation.retryAfter ?? machine.settings.fallbackDelay)))
                }
                carryOut(machine.complete(ticket, observation: observation, now: now))
            case .tick:
                carryOut(machine.tick(now: now))
            }
        }

        mutating func run() {
            while let index = queue.indices.min(by: {
                (queue[$0].time, queue[$0].order) < (queue[$1].time, queue[$1].order)
            }) {
                let (time, _, event) = queue.remove(at: index)
                precondition(time >= now, "time went backwards")
                now = time
                handle(event)
                if queue.allSatisfy({ $0.time > now }) { checkDeadlines() }
            }
        }

        /// Nobody still waits once its deadline has come, or its maximum wait from its first arrival has passed.
        mutating func checkDeadlines() {
            for (caller, fate) in fates {
                guard case .waiting(let id) = fate, id >= 0 else { continue }
                if let deadline = deadlines[caller], deadline <= now {
                    violations.append("caller \(caller) still waits at \(now), past its deadline \(deadline)")
                }
                if let maximum = machine.settings.maximumWait, let since = sinces[caller], since + maximum <= now {
                    violations.append("caller \(caller) still waits at \(now), past its maximum wait from \(since)")
                }
            }
        }

        var deadlines: [Int: Duration] = [:]
        /// Each caller's first arrival, and its arrival in this queue.
        var sinces: [Int: Duration] = [:]
        var arrivals: [Int: Duration] = [:]
    }

    @Test(
        "never more requests in a server window than it allows; nobody waits past its deadline or maximum wait; nobody leaks",
        arguments: 0..<60
    )
    func model(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 18)
        let limit = 1 + Int(random.next() % 20)
        let window = Duration.seconds(5 + Int(random.next() % 20))
        let maximumWait: Duration? = random.next() % 2 == 0 ? nil : .seconds(30 + Int(random.next() % 90))
        let settings = Machine.Settings(
            maximumQueueLength: random.next() % 3 == 0 ? 40 : nil,
            maximumWait: maximumWait,
            clientLimit: nil,
            clientWindow: nil,
            fallbackDelay: .seconds(1)
        )
        var simulation = Simulation(
            random: random,
            machine: Machine(settings: settings),
            server: Server(limit: limit, window: window, terse: seed % 3 == 2)
        )
        let callers = 200
        for caller in 0..<callers {
            let arrival = simulation.milliseconds(0...120_000)
            let deadline: Duration? = simulation.chance(0.4) ? arrival + simulation.milliseconds(1...60_000) : nil
            // A caller that waited for the fleet's window first comes back with its first arrival, earlier than
            // that of callers ahead of it in the queue.
            let since: Duration? = simulation.chance(0.3) ? arrival - simulation.milliseconds(0...60_000) : nil
            simulation.deadlines[caller] = deadline
            simulation.sinces[caller] = since ?? arrival
            simulation.arrivals[caller] = arrival
            simulation.schedule(.arrive(caller: caller, deadline: deadline, since: since), at: arrival)
        }
        simulation.run()

        #expect(simulation.violations == [], "seed \(seed)")
        if !simulation.server.terse {
            #expect(simulation.server.refusals == 0, "seed \(seed): the server refused requests")
        }
        #expect(simulation.server.counts.values.allSatisfy { $0 <= limit })
        #expect(simulation.machine.waiterCount == 0)
        #expect(simulation.machine.inFlight == 0)
        #expect(simulation.fates.count == callers)
        for (caller, fate) in simulation.fates {
            if case .waiting = fate { Issue.record("seed \(seed): caller \(caller) never resumed") }
            if case .refused(let at, .pastDeadline) = fate, let deadline = simulation.deadlines[caller] {
                #expect(at <= deadline, "seed \(seed): caller \(caller) refused after its deadline")
            }
            if case .sent(let at) = fate, let deadline = simulation.deadlines[caller] {
                #expect(at < deadline, "seed \(seed): caller \(caller) sent at or after its deadline")
            }
            // A caller whose maximum wait ended before it came back to the queue ends where it comes back.
            if let maximumWait, let since = simulation.sinces[caller], let arrival = simulation.arrivals[caller] {
                switch fate {
                case .sent(let at), .refused(let at, .waitTooLong):
                    #expect(
                        at <= max(arrival, since + maximumWait),
                        "seed \(seed): caller \(caller) \(fate) past its maximum wait"
                    )
                default: break
                }
            }
        }
        #expect(simulation.resumptions.values.allSatisfy { $0 <= 1 }, "seed \(seed): a caller was resumed twice")
    }

    @Test(
        "a client-side limit stays while the server sends no numbers: bare refusals hold for what they ask, the limit keeps",
        arguments: 0..<40
    )
    func clientLimitModel(seed: UInt64) {
        var random = SplitMix64.derived(seed: seed, 19)
        let limit = 1 + Int(random.next() % 10)
        let window = Duration.seconds(2 + Int(random.next() % 10))
        let settings = Machine.Settings(
            maximumQueueLength: nil,
            maximumWait: .seconds(30 + Int(random.next() % 90)),
            clientLimit: limit,
            clientWindow: window,
            fallbackDelay: .seconds(1)
        )
        var server = Server(limit: limit, window: window)
        server.silent = true
        var simulation = Simulation(random: random, machine: Machine(settings: settings), server: server)
        let callers = 300
        for caller in 0..<callers {
            let arrival = simulation.milliseconds(0...60_000)
            simulation.sinces[caller] = arrival
            simulation.arrivals[caller] = arrival
            simulation.schedule(.arrive(caller: caller, deadline: nil, since: nil), at: arrival)
        }
        simulation.run()

        #expect(simulation.violations == [], "seed \(seed)")
        #expect(!simulation.machine.isUnlimited, "seed \(seed): a response without fields ended the client's limit")
        #expect(simulation.machine.limit == limit, "seed \(seed)")
        #expect(simulation.machine.inFlight == 0 && simulation.machine.waiterCount == 0)
        // Fixed client windows let at most twice the limit through in any stretch of one window's length.
        let sends = simulation.sendTimes.sorted()
        var first = 0
        for (last, time) in sends.enumerated() {
            while sends[first] + window <= time { first += 1 }
            if last - first + 1 > 2 * limit {
                Issue.record(
                    "seed \(seed): \(last - first + 1) requests sent within \(window) of \(time), limit \(limit)"
                )
                break
            }
        }
        // Nothing goes while a refusal's hold lasts.
        for hold in simulation.holds {
            let inside = sends.filter { $0 > hold.from && $0 < hold.until }
            #expect(inside.isEmpty, "seed \(seed): sent at \(inside) during the hold \(hold.from)..<\(hold.until)")
        }
        #expect(simulation.resumptions.values.allSatisfy { $0 <= 1 }, "seed \(seed): a caller was resumed twice")
    }
}
