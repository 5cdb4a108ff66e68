import Testing

@testable import Courier

@Suite("RetryBudgetStateMachine")
struct RetryBudgetStateMachineTests {
    private typealias Machine = RetryBudgetStateMachine

    @Test("it starts with one second of the floor, capped at the maximum")
    func startingBalance() {
        #expect(Machine(ratio: 0.2, minimumPerSecond: 10, maximumBalance: 100).balance == 10)
        #expect(Machine(ratio: 0.2, minimumPerSecond: 10, maximumBalance: 4).balance == 4)
        #expect(Machine(ratio: 0.2, minimumPerSecond: 0, maximumBalance: 100).balance == 0)
    }

    @Test("each call adds the ratio exactly: five calls at 0.2 make one retry")
    func callsAddRatio() {
        var machine = Machine(ratio: 0.2, minimumPerSecond: 0, maximumBalance: 100)
        for _ in 0..<5 { machine.recordRequest() }
        #expect(machine.balance == 1)
        #expect(machine.requests == 5)
        #expect(machine.withdrawForRetry(now: .zero) == true)
        #expect(machine.withdrawForRetry(now: .zero) == false)
    }

    @Test("a retry takes one token; with less than one left it is refused and counted")
    func withdrawAndRefuse() {
        var machine = Machine(ratio: 0.5, minimumPerSecond: 2, maximumBalance: 100)
        #expect(machine.withdrawForRetry(now: .zero) == true)
        #expect(machine.withdrawForRetry(now: .zero) == true)
        machine.recordRequest()
        #expect(machine.balance == 0.5)
        #expect(machine.withdrawForRetry(now: .zero) == false)
        #expect(machine.balance == 0.5)
        #expect(machine.retries == 2)
        #expect(machine.refusals == 1)
    }

    @Test("time adds the floor per second, counted once for each stretch of time")
    func refillOnce() {
        var machine = Machine(ratio: 0, minimumPerSecond: 10, maximumBalance: 100)
        for _ in 0..<10 { #expect(machine.withdrawForRetry(now: .zero) == true) }
        #expect(machine.balance == 0)

        machine.refill(now: .milliseconds(500))
        #expect(machine.balance == 5)
        machine.refill(now: .milliseconds(500))
        #expect(machine.balance == 5)
        #expect(machine.withdrawForRetry(now: .milliseconds(600)) == true)
        #expect(machine.balance == 5)
    }

    @Test("a time earlier than the last refill adds nothing and does not move the refill back")
    func earlierTimeIgnored() {
        var machine = Machine(ratio: 0, minimumPerSecond: 10, maximumBalance: 100)
        for _ in 0..<10 { _ = machine.withdrawForRetry(now: .zero) }
        machine.refill(now: .seconds(1))
        #expect(machine.balance == 10)
        machine.refill(now: .milliseconds(900))
        #expect(machine.balance == 10)
        machine.refill(now: .milliseconds(1_100))
        #expect(machine.balance == 11)
    }

    @Test("neither calls nor time push the balance above the maximum")
    func capped() {
        var machine = Machine(ratio: 1, minimumPerSecond: 10, maximumBalance: 30)
        for _ in 0..<100 { machine.recordRequest() }
        #expect(machine.balance == 30)
        machine.refill(now: .seconds(3_600))
        #expect(machine.balance == 30)
        #expect(machine.withdrawForRetry(now: .seconds(3_600)) == true)
        #expect(machine.balance == 29)
    }
}
