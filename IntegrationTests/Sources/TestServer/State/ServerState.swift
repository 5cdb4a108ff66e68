import Foundation

/// Everything one test server remembers between requests: counters per key, auth realms, its own
/// and its peer's origin, and the requests waiting on it.
///
/// Waiters (hanging requests, `/wait/:key` long polls) are continuations keyed by an id; a waiter
/// whose task is cancelled removes itself, and ``beginShutdown()`` releases them all.
actor ServerState {
    let name: String
    private(set) var origin: URL?
    private(set) var peer: URL?
    private(set) var isShuttingDown = false

    private var counters: [String: CounterSnapshot] = [:]
    private var realms: [String: AuthRealm] = [:]

    private var nextWaiterID: UInt64 = 0
    private var shutdownWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var counterWaiters: [UInt64: CounterWaiter] = [:]

    private struct CounterWaiter {
        let key: String
        let condition: @Sendable (CounterSnapshot) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    init(name: String) {
        self.name = name
    }

    func setOrigin(_ origin: URL) {
        self.origin = origin
    }

    func setPeer(_ peer: URL?) {
        self.peer = peer
    }

    // MARK: Counters

    func snapshot(_ key: String) -> CounterSnapshot {
        self.counters[key] ?? CounterSnapshot(key: key)
    }

    @discardableResult
    func hit(_ key: String) -> CounterSnapshot {
        self.update(key) { $0.hits += 1 }
    }

    /// Counts one `/flaky` attempt and returns its number, from 1.
    func flakyAttempt(_ key: String) -> Int {
        self.update(key) { $0.flakyAttempts += 1 }.flakyAttempts
    }

    func hangStarted(_ key: String) {
        self.update(key) { $0.hanging += 1 }
    }

    func hangEnded(_ key: String) {
        self.update(key) {
            $0.hanging -= 1
            $0.hangsEnded += 1
        }
    }

    /// Forgets every counter and realm (waiters are left alone).
    func reset() {
        self.counters = [:]
        self.realms = [:]
    }

    @discardableResult
    private func update(_ key: String, _ change: (inout CounterSnapshot) -> Void) -> CounterSnapshot {
        var snapshot = self.snapshot(key)
        change(&snapshot)
        self.counters[key] = snapshot
        for (id, waiter) in self.counterWaiters where waiter.key == key && waiter.condition(snapshot) {
            self.counterWaiters[id] = nil
            waiter.continuation.resume()
        }
        return snapshot
    }

    /// Waits until `condition` holds for the key's counters, the task is cancelled, or the server
    /// shuts down; returns the counters as they are then.
    ///
    /// While it waits, the key's `waiting` counter includes it, so another long poll can wait for
    /// this one to be in place.
    func waitUntil(
        _ key: String,
        _ condition: @escaping @Sendable (CounterSnapshot) -> Bool
    ) async -> CounterSnapshot {
        let id = self.makeWaiterID()
        var registered = false
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if condition(self.snapshot(key)) || self.isShuttingDown || Task.isCancelled {
                    continuation.resume()
                } else {
                    registered = true
                    self.update(key) { $0.waiting += 1 }
                    self.counterWaiters[id] = CounterWaiter(key: key, condition: condition, continuation: continuation)
                }
            }
        } onCancel: {
            Task { await self.releaseCounterWaiter(id) }
        }
        let snapshot = self.snapshot(key)
        if registered {
            self.update(key) { $0.waiting -= 1 }
        }
        return snapshot
    }

    private func releaseCounterWaiter(_ id: UInt64) {
        self.counterWaiters.removeValue(forKey: id)?.continuation.resume()
    }

    // MARK: Shutdown

    /// Waits until the server shuts down or the task is cancelled.
    func waitForShutdown() async {
        let id = self.makeWaiterID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if self.isShuttingDown || Task.isCancelled {
                    continuation.resume()
                } else {
                    self.shutdownWaiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.releaseShutdownWaiter(id) }
        }
    }

    private func releaseShutdownWaiter(_ id: UInt64) {
        self.shutdownWaiters.removeValue(forKey: id)?.resume()
    }

    /// Marks the server as shutting down and releases every waiter.
    func beginShutdown() {
        self.isShuttingDown = true
        let shutdownWaiters = self.shutdownWaiters.values
        let counterWaiters = self.counterWaiters.values
        self.shutdownWaiters = [:]
        self.counterWaiters = [:]
        for continuation in shutdownWaiters { continuation.resume() }
        for waiter in counterWaiters { waiter.continuation.resume() }
    }

    private func makeWaiterID() -> UInt64 {
        self.nextWaiterID += 1
        return self.nextWaiterID
    }

    // MARK: Auth

    func issueToken(realm: String, expiresIn: Duration) -> String {
        let nonce = UUID().uuidString.lowercased()
        return self.realms[realm, default: AuthRealm(name: realm)]
            .issue(expiresIn: expiresIn, now: .now, nonce: nonce)
    }

    func recordFailedTokenRequest(realm: String) {
        self.realms[realm, default: AuthRealm(name: realm)].recordFailedTokenRequest()
    }

    func expireToken(realm: String) -> Bool {
        self.realms[realm, default: AuthRealm(name: realm)].expireCurrent(now: .now)
    }

    func checkToken(_ token: String?, realm: String) -> AuthRealm.Rejection? {
        self.realms[realm, default: AuthRealm(name: realm)].check(token, now: .now)
    }

    func authStats(realm: String) -> AuthStats {
        (self.realms[realm] ?? AuthRealm(name: realm)).stats
    }
}
