import Courier

/// A one-shot gate: tasks that call ``wait()`` suspend until someone calls ``open()``; after that,
/// ``wait()`` returns at once.
///
/// Use it to hold requests in flight in a test and release them all together:
///
/// ```swift
/// let gate = Gate()
/// let transport = MockTransport { _ in await gate.wait(); return .ok }
/// // … start requests, check that they are in flight …
/// gate.open()
/// ```
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var cancellableWaiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextID = 0
    }

    private let state = LockedState(State())

    /// Creates a closed gate.
    public init() {}

    /// Whether the gate has been opened.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Suspends until the gate is open. Cancellation does not end the wait.
    ///
    /// That makes it the way to model a transport that ignores cancellation. In a test's own body, where
    /// the code under test should open the gate, prefer ``waitUnlessCancelled()``: should the code never
    /// open it, the test's time limit cancels the wait and the test fails, where `wait()` would keep the
    /// test (and the run) waiting.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Suspends until the gate is open, or throws `CancellationError` when the task is cancelled first.
    ///
    /// - Throws: `CancellationError`.
    public func waitUnlessCancelled() async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.isOpen { return .success(()) }
                    // Checked under the lock: `onCancel` takes the lock after the flag is set, so either it
                    // finds this waiter or this check sees the cancellation.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.cancellableWaiters[id] = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.cancellableWaiters.removeValue(forKey: id) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Opens the gate and resumes every waiting task. Opening an open gate does nothing.
    public func open() {
        let (waiters, cancellableWaiters) = state.withLock { state in
            state.isOpen = true
            defer {
                state.waiters = []
                state.cancellableWaiters = [:]
            }
            return (state.waiters, Array(state.cancellableWaiters.values))
        }
        for waiter in waiters { waiter.resume() }
        for waiter in cancellableWaiters { waiter.resume() }
    }
}

/// Counts arrivals and lets tasks wait until a number of them have arrived.
///
/// ```swift
/// let arrived = Arrivals()
/// let transport = MockTransport { _ in arrived.arrive(); await release.wait(); return .ok }
/// // … start 100 requests …
/// await arrived.wait(for: 100)   // all 100 are inside the transport now
/// ```
public final class Arrivals: Sendable {
    private struct State {
        var count = 0
        var waiters = CountWaiters()
    }

    private let state = LockedState(State())

    /// Creates a counter at zero.
    public init() {}

    /// How many arrivals so far.
    public var count: Int { state.withLock { $0.count } }

    /// Records one arrival and resumes the waiters whose target is reached.
    public func arrive() {
        let reached = state.withLock { state in
            state.count += 1
            return state.waiters.takeReached(state.count)
        }
        for continuation in reached { continuation.resume() }
    }

    /// Suspends until at least `target` arrivals have been recorded, or until the waiting task is cancelled.
    ///
    /// Cancellation ends the wait early (without throwing), so that a test whose time limit passes goes on
    /// to fail its expectations instead of hanging; check ``count`` if it matters.
    ///
    /// - Parameter target: The number of arrivals to wait for.
    public func wait(for target: Int) async {
        await CountWaiters.wait(in: state, at: \.waiters, until: \.count, reaches: target)
    }
}
