import Testing

@testable import Courier

@Suite("TokenRefresherStateMachine")
struct TokenRefresherStateMachineTests {
    private typealias Machine = TokenRefresherStateMachine
    private typealias Token = TokenRefresher.Token

    private struct RefreshError: Error, Equatable {}

    /// Drives a machine and tells what came out as short strings, so expectations read like a script.
    private final class Driver {
        var machine: Machine

        init(_ token: Token = Token("v1"), limit: TokenRefresher.RefreshLimit = .default) {
            machine = Machine(token: token, leeway: .seconds(30), limit: limit)
        }

        var credential: Machine.Credential { machine.credential }

        /// What a caller holding `stale` is told: `use v2`, `wait`, `start v1`, `fail refreshFailed`.
        func ask(_ stale: Machine.Credential, waiter: Int, now: Duration = .zero) -> String {
            switch machine.newerCredential(than: stale, waiter: waiter, isRefreshClosure: false, now: now) {
            case .use(let credential): "use \(credential.value)"
            case .fail(let error): "fail \(error.code)"
            case .wait: "wait"
            case .waitAndStart(let replaced): "start \(replaced.value)"
            case .waitingForItself: "itself"
            }
        }

        /// Has waiter 1, holding the current credential, start a refresh; returns that credential.
        @discardableResult
        func startRefresh(
            now: Duration = .zero,
            sourceLocation: SourceLocation = #_sourceLocation
        ) -> Machine.Credential {
            let held = credential
            #expect(ask(held, waiter: 1, now: now) == "start \(held.value)", sourceLocation: sourceLocation)
            return held
        }

        func finish(_ result: Result<Token, any Error>, now: Duration = .zero) -> [String] {
            Self.describe(machine.finishRefresh(result, now: now))
        }

        func cancel(waiter: Int) -> Bool {
            machine.cancel(waiter: waiter)
        }

        func set(_ token: Token, now: Duration = .zero) -> [String] {
            Self.describe(machine.setToken(token, now: now))
        }

        /// The waiters resumed and how (`1: v2`, `2: refreshFailed`), then `start v2` if a refresh starts.
        static func describe(_ resumption: Machine.Resumption) -> [String] {
            resumption.resume.map { waiter, outcome in
                switch outcome {
                case .success(let credential): "\(waiter): \(credential.value)"
                case .failure(let error): "\(waiter): \(error.code)"
                }
            } + (resumption.start.map { ["start \($0.value)"] } ?? [])
        }
    }

    // MARK: Lifetimes

    @Test(
        "a token received with a lifetime is due once min(leeway, lifetime / 2) is left; none or no time left: never",
        arguments: [
            (Duration?.some(.seconds(1)), Duration?.some(.milliseconds(500))),
            (.seconds(30), .seconds(15)),
            (.seconds(60), .seconds(30)),
            (.seconds(3600), .seconds(3570)),
            (nil, nil),
            (.zero, nil),
            (.seconds(-5), nil),
        ]
    )
    func refreshTime(lifetime: Duration?, due: Duration?) {
        #expect(
            Machine.refreshTime(lifetime: lifetime, storedAt: .seconds(100), leeway: .seconds(30))
                == due.map { $0 + .seconds(100) }
        )
    }

    @Test("the initial token with no time left is due at once; with time left, it follows the rule")
    func initialToken() {
        #expect(Machine.isExpiring(Driver(Token("v1", expiresIn: .zero)).credential, now: .zero))
        #expect(Machine.isExpiring(Driver(Token("v1", expiresIn: .seconds(-60))).credential, now: .zero))
        let fresh = Driver(Token("v1", expiresIn: .seconds(20))).credential
        #expect(!Machine.isExpiring(fresh, now: .seconds(9)))
        #expect(Machine.isExpiring(fresh, now: .seconds(10)))
        #expect(fresh.expiresAt == .seconds(20))
    }

    @Test("a refreshed token is stored with its expiry and due time counted from when it arrives")
    func refreshedExpiry() {
        let driver = Driver()
        driver.startRefresh(now: .seconds(5))
        _ = driver.finish(.success(Token("v2", expiresIn: .seconds(60))), now: .seconds(7))
        #expect(driver.credential.expiresAt == .seconds(67))
        #expect(driver.credential.refreshAt == .seconds(37))
    }

    // MARK: One refresh

    @Test("callers with the same version share one refresh and all get its token, in the order they came")
    func sharedRefresh() {
        let driver = Driver()
        let v1 = driver.startRefresh()
        #expect(driver.ask(v1, waiter: 2) == "wait")
        #expect(driver.ask(v1, waiter: 0) == "wait")
        #expect(driver.machine.waiterCount == 3)
        #expect(driver.finish(.success(Token("v2")), now: .zero) == ["0: v2", "1: v2", "2: v2"])
        #expect(driver.credential.version == 2)
        #expect(driver.machine.refreshing == nil)
        #expect(driver.machine.refreshesStarted == 1)
        // A straggler with v1 gets v2 without a refresh.
        #expect(driver.ask(v1, waiter: 3) == "use v2")
        #expect(driver.machine.refreshesStarted == 1)
    }

    // MARK: Newer only (issue 13 #9)

    @Test("setToken during a refresh: waiters get the token set at once, the refresh's result is dropped")
    func setTokenResumesWaiters() {
        let driver = Driver()
        driver.startRefresh()
        #expect(driver.set(Token("signed-in"), now: .zero) == ["1: signed-in"])
        #expect(driver.machine.refreshing == 1)  // the refresh goes on
        #expect(driver.finish(.success(Token("late")), now: .zero) == [])
        #expect(driver.credential.value == "signed-in")
        #expect(driver.credential.version == 2)
    }

    @Test(
        "rejected with the token set during a refresh of an older one: waits, then one refresh of it for all",
        arguments: [true, false]
    )
    func rejectedTokenSetDuringRefresh(firstRefreshSucceeds: Bool) {
        let driver = Driver()
        let v1 = driver.startRefresh()
        _ = driver.set(Token("revoked"), now: .zero)
        let v2 = driver.credential
        #expect(driver.ask(v2, waiter: 2) == "wait")
        #expect(driver.ask(v2, waiter: 3) == "wait")
        #expect(driver.ask(v1, waiter: 4) == "use revoked")  // older than the current one: newer at once

        let first: Result<Token, any Error> = firstRefreshSucceeds ? .success(Token("late")) : .failure(RefreshError())
        #expect(driver.finish(first, now: .zero) == ["start revoked"])
        #expect(driver.machine.refreshing == 2)
        #expect(driver.ask(v2, waiter: 5) == "wait")  // joins it
        #expect(
            driver.finish(.success(Token("fresh")), now: .zero) == [
                "2: fresh", "3: fresh", "5: fresh",
            ]
        )
        #expect(driver.credential.version == 3)
        #expect(driver.machine.refreshesStarted == 2)
        #expect(driver.credential.failedRefreshes == 0)  // the dropped failure is nobody's
    }

    @Test("the refresh after a dropped one is refused by the limit: its waiters fail with tooManyRefreshes")
    func secondRefreshRefusedByTheLimit() {
        let driver = Driver(limit: .init(maximum: 1, per: .seconds(30)))
        driver.startRefresh()
        _ = driver.set(Token("revoked"), now: .zero)
        #expect(driver.ask(driver.credential, waiter: 2) == "wait")
        #expect(driver.finish(.success(Token("late")), now: .seconds(1)) == ["2: tooManyRefreshes"])
        #expect(driver.machine.waiterCount == 0)
        #expect(driver.machine.refreshing == nil)
    }

    @Test("waiters cancelled while waiting for an older refresh: no refresh starts for nobody")
    func cancelledWaitersStartNothing() {
        let driver = Driver()
        driver.startRefresh()
        _ = driver.set(Token("revoked"), now: .zero)
        #expect(driver.ask(driver.credential, waiter: 2) == "wait")
        #expect(driver.cancel(waiter: 2))
        #expect(!driver.cancel(waiter: 2))
        #expect(driver.finish(.success(Token("late")), now: .zero) == [])
        #expect(driver.machine.refreshesStarted == 1)
    }

    // MARK: Failure

    @Test("a failed refresh fails every waiter with one error; a straggler gets it too; a later reader refreshes")
    func failureEndsTheWave() {
        let driver = Driver()
        let v1 = driver.startRefresh()
        #expect(driver.ask(v1, waiter: 2) == "wait")
        let resumption = driver.machine.finishRefresh(.failure(RefreshError()), now: .zero)
        #expect(Driver.describe(resumption) == ["1: refreshFailed", "2: refreshFailed"])
        let underlying = resumption.resume.map { entry -> RefreshError? in
            guard case .failure(let error) = entry.outcome else { return nil }
            return error.underlying as? RefreshError
        }
        #expect(underlying == [RefreshError(), RefreshError()])

        #expect(driver.ask(v1, waiter: 3) == "fail refreshFailed")  // read v1 before the failure
        #expect(driver.machine.refreshesStarted == 1)
        #expect(driver.ask(driver.credential, waiter: 4) == "start v1")  // read it after the failure
        #expect(driver.machine.refreshesStarted == 2)
    }

    @Test(
        "a refreshed token that is empty or contains CR, LF or NUL fails the refresh",
        arguments: ["", "a\r\nb", "a\0"]
    )
    func unusableToken(value: String) {
        let driver = Driver()
        driver.startRefresh()
        #expect(driver.finish(.success(Token(value)), now: .zero) == ["1: refreshFailed"])
        #expect(driver.credential.value == "v1")
    }

    @Test("the refresh closure asking for a newer token is told it would wait for itself")
    func waitingForItself() {
        let driver = Driver()
        let v1 = driver.startRefresh()
        guard
            case .waitingForItself = driver.machine.newerCredential(
                than: v1,
                waiter: 2,
                isRefreshClosure: true,
                now: .zero
            )
        else {
            Issue.record("expected waitingForItself")
            return
        }
        #expect(driver.machine.waiterCount == 1)
    }

    // MARK: Limit

    @Test("more refreshes than the limit within the window are refused until the window moves on")
    func limit() {
        let driver = Driver(limit: .init(maximum: 2, per: .seconds(30)))
        for (index, now) in [Duration.zero, .seconds(10)].enumerated() {
            #expect(driver.ask(driver.credential, waiter: index, now: now) == "start \(driver.credential.value)")
            _ = driver.finish(.success(Token("v\(index + 2)")), now: now)
        }
        #expect(driver.ask(driver.credential, waiter: 5, now: .seconds(29)) == "fail tooManyRefreshes")
        #expect(driver.ask(driver.credential, waiter: 6, now: .seconds(30)) == "start v3")
        #expect(driver.machine.refreshesStarted == 3)
    }
}
