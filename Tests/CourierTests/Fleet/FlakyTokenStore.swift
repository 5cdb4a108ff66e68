import Courier
import CourierTesting

/// A ``SharedTokenStore`` in front of an ``InMemorySharedTokenStore`` whose calls fail as a test says: before
/// the store did anything (the database was unreachable) or after it committed (the answer was lost on the
/// way back, as when a call times out after its transaction committed).
final class FlakyTokenStore<C: Clock<Duration>>: SharedTokenStore {
    /// A store operation.
    enum Operation: String, Sendable, CaseIterable {
        case token, beginRefresh, finishRefresh, replaceToken, waitForChange
    }

    /// How one call fails.
    enum Fault: Sendable {
        /// The call throws and the store is unchanged.
        case before
        /// The store does what was asked, then the call throws.
        case afterCommit
    }

    struct Unreachable: Error {}

    private struct State {
        var calls: [Operation: Int] = [:]
        var failures: [Operation: Int] = [:]
        var answered: [Operation: Int] = [:]
    }

    /// The store behind the faults.
    let inner: InMemorySharedTokenStore<C>
    private let fault: @Sendable (Operation, _ call: Int) -> Fault?
    private let state = LockedState(State())

    /// - Parameter fault: How the `call`-th call (from 0) of an operation fails, or `nil` for a call that works.
    init(_ inner: InMemorySharedTokenStore<C>, fault: @escaping @Sendable (Operation, _ call: Int) -> Fault?) {
        self.inner = inner
        self.fault = fault
    }

    /// How many calls of `operation` were made.
    func calls(_ operation: Operation) -> Int { state.withLock { $0.calls[operation] ?? 0 } }
    /// How many calls of `operation` failed.
    func failures(_ operation: Operation) -> Int { state.withLock { $0.failures[operation] ?? 0 } }

    /// How many calls of `operation` were answered without a fault.
    func answered(_ operation: Operation) -> Int { state.withLock { $0.answered[operation] ?? 0 } }

    private func run<Value>(_ operation: Operation, _ body: () async throws -> Value) async throws -> Value {
        let call = state.withLock { state in
            defer { state.calls[operation, default: 0] += 1 }
            return state.calls[operation] ?? 0
        }
        let fault = fault(operation, call)
        if fault == .before {
            state.withLock { $0.failures[operation, default: 0] += 1 }
            throw Unreachable()
        }
        let value = try await body()
        if fault == .afterCommit {
            state.withLock { $0.failures[operation, default: 0] += 1 }
            throw Unreachable()
        }
        state.withLock { $0.answered[operation, default: 0] += 1 }
        return value
    }

    func token() async throws -> SharedToken? {
        try await run(.token) { await inner.token() }
    }
    func beginRefresh(after version: Int, holder: String, lease: Duration) async throws -> SharedRefreshLease {
        try await run(.beginRefresh) { await inner.beginRefresh(after: version, holder: holder, lease: lease) }
    }
    func finishRefresh(_ token: SharedToken?, holder: String) async throws -> SharedToken? {
        try await run(.finishRefresh) { await inner.finishRefresh(token, holder: holder) }
    }
    func replaceToken(_ token: SharedToken) async throws -> SharedToken {
        try await run(.replaceToken) { await inner.replaceToken(token) }
    }
    /// Forwarded without faults: a renewal that fails only lets the lease run out, as a crash does.
    func renewLease(holder: String, lease: Duration) async throws -> Bool {
        await inner.renewLease(holder: holder, lease: lease)
    }
    func waitForChange(after version: Int, timeout: Duration) async throws {
        try await run(.waitForChange) { try await inner.waitForChange(after: version, timeout: timeout) }
    }
}
