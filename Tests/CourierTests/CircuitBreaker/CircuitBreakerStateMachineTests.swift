import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("CircuitBreakerStateMachine")
struct CircuitBreakerStateMachineTests {
    private typealias Machine = CircuitBreakerStateMachine

    private func machine(threshold: Int = 3, cooldown: Duration = .seconds(10)) -> Machine {
        Machine(failureThreshold: threshold, cooldown: cooldown)
    }

    /// A machine that has just opened at time `at`.
    private func opened(at time: Duration = .zero) -> Machine {
        var machine = machine()
        for _ in 0..<3 { _ = machine.record(.failure, probe: false, now: time) }
        return machine
    }

    /// A machine that opened at zero and let a probe through when its cooldown ended, at 10 s.
    private func probing() -> Machine {
        var machine = opened()
        #expect(machine.admit(now: .seconds(10)) == .sendProbe)
        return machine
    }

    @Test("closed: sends, counts consecutive failures, and a success resets the count")
    func closedCounts() {
        var machine = machine()
        #expect(machine.admit(now: .zero) == .send)
        #expect(machine.record(.failure, probe: false, now: .zero) == .none)
        #expect(machine.record(.failure, probe: false, now: .zero) == .none)
        #expect(machine.state == .closed(consecutiveFailures: 2))
        #expect(machine.record(.success, probe: false, now: .zero) == .none)
        #expect(machine.state == .closed(consecutiveFailures: 0))
        #expect(machine.isPristine)
    }

    @Test("a cancelled request counts neither way")
    func ignoredKeepsCount() {
        var machine = machine()
        _ = machine.record(.failure, probe: false, now: .zero)
        #expect(machine.record(.ignored, probe: false, now: .zero) == .none)
        #expect(machine.state == .closed(consecutiveFailures: 1))
    }

    @Test("opens after the threshold of consecutive failures", arguments: [1, 2, 5])
    func opensAtThreshold(threshold: Int) {
        var machine = machine(threshold: threshold, cooldown: .seconds(10))
        for _ in 0..<(threshold - 1) {
            #expect(machine.record(.failure, probe: false, now: .seconds(1)) == .none)
        }
        #expect(machine.record(.failure, probe: false, now: .seconds(1)) == .opened)
        #expect(machine.state == .open(until: .seconds(11)))
    }

    @Test("open: rejects, saying how long until the next probe")
    func openRejects() {
        var machine = opened(at: .seconds(5))
        #expect(machine.admit(now: .seconds(5)) == .reject(retryAfter: .seconds(10)))
        #expect(machine.admit(now: .seconds(14)) == .reject(retryAfter: .seconds(1)))
        #expect(machine.state == .open(until: .seconds(15)))
    }

    @Test("after the cooldown one probe goes through and the others are rejected")
    func oneProbe() {
        var machine = opened()
        #expect(machine.admit(now: .seconds(10)) == .sendProbe)
        #expect(machine.state == .halfOpen(probeSince: .seconds(10)))
        #expect(machine.admit(now: .seconds(11)) == .reject(retryAfter: .seconds(9)))
    }

    @Test("a successful probe closes the circuit")
    func probeSuccessCloses() {
        var machine = probing()
        #expect(machine.record(.success, probe: true, now: .seconds(12)) == .closed)
        #expect(machine.state == .closed(consecutiveFailures: 0))
        #expect(machine.admit(now: .seconds(12)) == .send)
    }

    @Test("a failed probe opens the circuit for another cooldown")
    func probeFailureReopens() {
        var machine = probing()
        #expect(machine.record(.failure, probe: true, now: .seconds(12)) == .opened)
        #expect(machine.state == .open(until: .seconds(22)))
        #expect(machine.admit(now: .seconds(21)) == .reject(retryAfter: .seconds(1)))
        #expect(machine.admit(now: .seconds(22)) == .sendProbe)
    }

    @Test("a cancelled probe decides nothing, and the next request probes")
    func cancelledProbe() {
        var machine = probing()
        #expect(machine.record(.ignored, probe: true, now: .seconds(11)) == .none)
        #expect(machine.state == .halfOpen(probeSince: nil))
        #expect(machine.admit(now: .seconds(11)) == .sendProbe)
    }

    @Test("a probe still running after another cooldown no longer blocks a new one")
    func hungProbe() {
        var machine = opened()
        #expect(machine.admit(now: .seconds(10)) == .sendProbe)
        #expect(machine.admit(now: .seconds(19)) == .reject(retryAfter: .seconds(1)))
        #expect(machine.admit(now: .seconds(20)) == .sendProbe)
        #expect(machine.state == .halfOpen(probeSince: .seconds(20)))
    }

    @Test(
        "a probe that another probe replaced decides nothing: cancelled, it frees no slot; failed or succeeded, it leaves the new probe's verdict to come"
    )
    func replacedProbeDecidesNothing() {
        var machine = opened()
        #expect(machine.admit(now: .seconds(10)) == .sendProbe)
        let first = machine.probeGeneration
        #expect(machine.admit(now: .seconds(20)) == .sendProbe)
        let second = machine.probeGeneration
        // The first probe's caller goes away: the second probe is still in flight, nobody else is let through.
        #expect(machine.record(.ignored, probe: first, now: .seconds(21)) == .none)
        #expect(machine.admit(now: .seconds(21)) == .reject(retryAfter: .seconds(9)))
        // The first probe fails late: the circuit stays half-open for the second one to decide.
        #expect(machine.record(.failure, probe: first, now: .seconds(22)) == .none)
        #expect(machine.state == .halfOpen(probeSince: .seconds(20)))
        #expect(machine.record(.success, probe: second, now: .seconds(23)) == .closed)
        #expect(machine.state == .closed(consecutiveFailures: 0))
        // And a late success of a replaced probe closes nothing either.
        var other = opened()
        _ = other.admit(now: .seconds(10))
        let stale = other.probeGeneration
        _ = other.admit(now: .seconds(20))
        #expect(other.record(.success, probe: stale, now: .seconds(21)) == .none)
        #expect(other.state == .halfOpen(probeSince: .seconds(20)))
        // Nor, once the new probe closed the circuit, does the replaced one's late failure open it again.
        #expect(other.record(.success, probe: other.probeGeneration, now: .seconds(22)) == .closed)
        #expect(other.record(.failure, probe: stale, now: .seconds(23)) == .none)
        #expect(other.state == .closed(consecutiveFailures: 0))
    }

    @Test("outcomes of requests admitted before the circuit opened are ignored while it is open or half-open")
    func staleOutcomesIgnored() {
        var machine = opened()
        #expect(machine.record(.success, probe: false, now: .seconds(1)) == .none)
        #expect(machine.record(.failure, probe: false, now: .seconds(1)) == .none)
        #expect(machine.state == .open(until: .seconds(10)))
        _ = machine.admit(now: .seconds(10))
        #expect(machine.record(.success, probe: false, now: .seconds(10)) == .none)
        #expect(machine.state == .halfOpen(probeSince: .seconds(10)))
    }

    @Test("a zero cooldown probes on the next request")
    func zeroCooldown() {
        var machine = machine(threshold: 1, cooldown: .zero)
        #expect(machine.record(.failure, probe: false, now: .seconds(3)) == .opened)
        #expect(machine.admit(now: .seconds(3)) == .sendProbe)
    }
}

@Suite("CircuitBreaker's memory of hosts")
struct CircuitBreakerHostMemoryTests {
    @Test("a client that calls many hosts keeps at most trackedHostLimit circuits, an open one before closed ones")
    func boundedHosts() async throws {
        let breaker = CircuitBreaker(.init(failureThreshold: 2, cooldown: .seconds(30)), clock: ManualClock())
        let client = Client(transport: MockTransport(.status(503)), middleware: [.circuitBreaker(breaker)])
        let dead = URL(string: "https://dead.example.test/")!
        for _ in 0..<2 { _ = try await client.send(URLRequest(url: dead)) }
        #expect(breaker.state(for: dead) == .open)
        // One failure on each of many hosts: each is a circuit a failure short of opening.
        for index in 0..<(CircuitBreaker.trackedHostLimit + 10) {
            _ = try await client.send(URLRequest(url: URL(string: "https://h\(index).example.test/")!))
        }
        #expect(breaker.trackedHosts <= CircuitBreaker.trackedHostLimit)
        #expect(breaker.state(for: dead) == .open)
        let last = URL(string: "https://h\(CircuitBreaker.trackedHostLimit + 9).example.test/")!
        #expect(breaker.state(for: last) == .closed(consecutiveFailures: 1))
    }
}
