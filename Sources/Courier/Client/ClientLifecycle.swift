import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Client``'s in-flight count and shutdown state, shared by every `send`.
///
/// The hot path is one atomic add when a request starts and one atomic subtract when it ends. Everything
/// else (waiting for idle, cancelling after a grace period) takes the registry lock, which `send` touches
/// only when the client is closed or when requests are cancellable on shutdown.
final class ClientLifecycle: Sendable {
    /// Bit 0: closed (no new requests). Bit 1: requests run cancellably. The rest: requests in flight.
    private let word = Atomic<Int>(0)
    private static let closedBit = 1
    private static let cancellableBit = 2
    private static let oneRequest = 4

    private struct Registry {
        var nextID = 0
        var tasks: [Int: Task<(Data, HTTPURLResponse), any Error>] = [:]
        var isCancelling = false
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelledWaiters: Set<Int> = []
    }

    // Guards the cancellable tasks, the idle waiters and the cancelling flag.
    private let registry = LockedState(Registry())

    init() {}

    /// Requests in flight now.
    var inFlight: Int { word.load(ordering: .acquiring) / Self.oneRequest }

    /// Whether the client refuses new requests.
    var isClosed: Bool { word.load(ordering: .acquiring) & Self.closedBit != 0 }

    /// Whether requests started from now on can be cancelled by ``cancelInFlight()``.
    var isCancellable: Bool {
        get { word.load(ordering: .acquiring) & Self.cancellableBit != 0 }
        set {
            if newValue {
                word.bitwiseOr(Self.cancellableBit, ordering: .acquiringAndReleasing)
            } else {
                word.bitwiseAnd(~Self.cancellableBit, ordering: .acquiringAndReleasing)
            }
        }
    }

    /// Sends `request` through `chain`, counting it in flight; throws ``CourierError/Code/clientShutDown``
    /// once the client is closed.
    @inline(__always)
    func send(_ request: URLRequest, through chain: Chain) async throws -> (Data, HTTPURLResponse) {
        let before = word.wrappingAdd(Self.oneRequest, ordering: .acquiringAndReleasing).oldValue
        defer { end() }
        if before & Self.closedBit != 0 {
            throw CourierError(
                .clientShutDown,
                message: "the client is shut down and accepts no new requests",
                request: request
            )
        }
        if before & Self.cancellableBit == 0 {
            return try await chain.send(request, from: 0)
        }
        return try await sendCancellably(request, through: chain)
    }

    private func end() {
        let after = word.wrappingSubtract(Self.oneRequest, ordering: .acquiringAndReleasing).newValue
        guard after < Self.oneRequest, after & Self.closedBit != 0 else { return }
        let waiters = registry.withLock { registry in
            defer { registry.idleWaiters = [:] }
            return Array(registry.idleWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs the chain in a task of its own, so that ``cancelInFlight()`` can cancel the request without
    /// cancelling the caller's task. Costs one task per request; used only when the client opted in.
    private func sendCancellably(
        _ request: URLRequest,
        through chain: Chain
    ) async throws -> (Data, HTTPURLResponse) {
        let task = Task { try await chain.send(request, from: 0) }
        let id = registry.withLock { registry in
            if registry.isCancelling { task.cancel() }
            registry.nextID += 1
            registry.tasks[registry.nextID] = task
            return registry.nextID
        }
        defer { _ = registry.withLock { $0.tasks.removeValue(forKey: id) } }
        do {
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch is CancellationError where !Task.isCancelled && registry.withLock({ $0.isCancelling }) {
            throw CourierError(
                .clientShutDown,
                message: "the client shut down and cancelled the request when its grace period ended",
                request: request
            )
        }
    }

    /// How many tasks are waiting in ``waitUntilIdle()`` (for tests).
    var idleWaiterCount: Int {
        registry.withLock { $0.idleWaiters.count }
    }

    /// Refuses new requests from now on.
    func close() {
        word.bitwiseOr(Self.closedBit, ordering: .acquiringAndReleasing)
    }

    /// Cancels every request running cancellably, and any that starts cancellably from now on.
    func cancelInFlight() {
        let tasks = registry.withLock { registry in
            registry.isCancelling = true
            return Array(registry.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Suspends until the client is closed and no request is in flight. A cancelled waiter returns early.
    func waitUntilIdle() async {
        let id = registry.withLock { registry in
            registry.nextID += 1
            return registry.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = registry.withLock { registry in
                    // `end()` decrements before taking this lock, so a waiter that sees requests in flight
                    // here is registered before the last of them looks for waiters.
                    let word = self.word.load(ordering: .acquiring)
                    let idle = word < Self.oneRequest && word & Self.closedBit != 0
                    if idle || registry.cancelledWaiters.remove(id) != nil { return true }
                    registry.idleWaiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = registry.withLock { registry in
                guard let waiter = registry.idleWaiters.removeValue(forKey: id) else {
                    registry.cancelledWaiters.insert(id)
                    return CheckedContinuation<Void, Never>?.none
                }
                return waiter
            }
            waiter?.resume()
        }
        registry.withLock { _ = $0.cancelledWaiters.remove(id) }
    }
}
