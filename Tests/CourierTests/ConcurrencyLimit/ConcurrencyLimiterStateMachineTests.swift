import Testing

@testable import Courier

@Suite("ConcurrencyLimiterStateMachine")
struct ConcurrencyLimiterStateMachineTests {
    /// Pools are numbers, handed out in the order they are made, so a test can tell a reused pool from a new one.
    private struct Pools {
        var made = 0
        mutating func enter(_ host: String, on machine: inout ConcurrencyLimiterStateMachine<Int>) -> Int {
            machine.enter(host) {
                made += 1
                return made
            }
        }
    }

    @Test("requests to one host share its pool; another host gets its own")
    func onePoolPerHost() {
        var machine = ConcurrencyLimiterStateMachine<Int>()
        var pools = Pools()
        #expect(pools.enter("a:443", on: &machine) == 1)
        #expect(pools.enter("a:443", on: &machine) == 1)
        #expect(pools.enter("b:443", on: &machine) == 2)
        #expect(pools.made == 2)
        #expect(machine.pools.sorted() == [1, 2])
    }

    @Test("with few hosts, a pool whose last request left is kept and reused")
    func idlePoolKept() {
        var machine = ConcurrencyLimiterStateMachine<Int>(idlePoolsKept: 2)
        var pools = Pools()
        _ = pools.enter("a:443", on: &machine)
        machine.leave("a:443")
        #expect(machine.pools.count == 1)
        #expect(pools.enter("a:443", on: &machine) == 1)
        #expect(pools.made == 1)
    }

    @Test("beyond idlePoolsKept hosts, a pool is dropped when its last request leaves, not before")
    func idlePoolDropped() {
        var machine = ConcurrencyLimiterStateMachine<Int>(idlePoolsKept: 2)
        var pools = Pools()
        for host in ["a", "b", "c"] { _ = pools.enter(host, on: &machine) }
        _ = pools.enter("c", on: &machine)

        machine.leave("c")
        #expect(machine.pools.count == 3)  // "c" still has a request
        machine.leave("c")
        #expect(machine.pools.sorted() == [1, 2])
        machine.leave("a")
        #expect(machine.pools.sorted() == [1, 2])  // back to 2 hosts: idle pools are kept again

        #expect(pools.enter("c", on: &machine) == 4)  // a new pool, the old one was dropped
    }
}
