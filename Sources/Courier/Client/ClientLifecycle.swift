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
///
/// The count is the shutdown's own, not API: it costs one atomic where a ``RequestCounter`` costs two lock
/// sections, and users who want to watch requests in flight put `.counting(counter)` in the middleware.
final class ClientLifecycle: Sendable {
    /// Bit 0: closed (no new requests). Bit 1: requests run cancellably. The rest: requests in flight.
    private let word = Atomic<Int>(0)
    private static let closedBit = 1
    private static let cancellableBit = 2
    private static let oneRequest = 4

    /// The requests running cancellably, whether a shutdown is cancelling them, and the tasks waiting for
    /// the client to be idle. Generic over the running task so that tests can drive it with plain values.
    struct Registry<Running> {
        private var lastID = 0
        private var running: [Int: Running] = [:]
        /// Whether ``cancelAll()`` was called: what starts from now on is cancelled at once.
        private(set) var isCancelling = false
        /// The tasks in ``ClientLifecycle/waitUntilIdle()``.
        var idleWaiters = IdleWaiters<CheckedContinuation<Void, Never>>()

        /// Tracks a request that started running; `cancelNow` says it started after ``cancelAll()``.
        mutating func track(_ request: Running) -> (id: Int, cancelNow: Bool) {
            lastID += 1
            running[lastID] = request
            return (lastID, isCancelling)
        }

        /// Forgets a request that ended.
        mutating func untrack(_ id: Int) {
            running.removeValue(forKey: id)
        }

        /// Returns every request running now, to cancel, and marks those that start later for cancellation.
        mutating func cancelAll() -> [Running] {
            isCancelling = true
            return Array(running.values)
        }
    }

    /// What a shutdown's grace period can cancel: a request's task, or the body of a streamed call.
    enum Cancellable: Sendable {
        case task(Task<(Data, HTTPURLResponse), any Error>)
        case body(ChunkPipe)

        func cancel() {
            switch self {
            case .task(let task):
                task.cancel()
            case .body(let pipe):
                pipe.fail(
                    CourierError(
                        .clientShutDown,
                        message: "the client shut down and stopped the streamed body when its grace period ended"
                    )
                )
            }
        }
    }

    // Guards the cancellable requests and bodies, the idle waiters and the cancelling flag.
    private let registry = LockedState(Registry<Cancellable>())

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

    /// The same under `timeout`, a ``Request/timeout`` on the client's timer for its duration.
    ///
    /// Kept apart from `send`, which also does not call `begin`: one function with an optional timeout, or `send`
    /// calling `begin`, each cost `Client.send` about 330 instructions a call (callgrind, `client0`); with
    /// `begin`, the profile showed `send` no longer inlined into `Client.send`, an async frame more.
    func send(
        _ request: URLRequest,
        through chain: Chain,
        timeout: RequestTimeout
    ) async throws -> (Data, HTTPURLResponse) {
        let isCancellable = try begin(request)
        defer { end() }
        if !isCancellable {
            return try await timeout.send(request, through: chain)
        }
        return try await sendCancellably(request) { try await timeout.send($0, through: chain) }
    }

    /// Counts a request in flight, or refuses it once the client is closed; returns whether it runs cancellably.
    /// A request it counts must be ended with `end()`.
    @inline(__always)
    private func begin(_ request: URLRequest) throws(CourierError) -> Bool {
        let before = word.wrappingAdd(Self.oneRequest, ordering: .acquiringAndReleasing).oldValue
        if before & Self.closedBit != 0 {
            end()
            throw Self.refusal(request)
        }
        return before & Self.cancellableBit != 0
    }

    private static func refusal(_ request: URLRequest) -> CourierError {
        CourierError(.clientShutDown, message: "the client is shut down and accepts no new requests", request: request)
    }

    /// Runs a streamed call: `operation` sends `request` through the streaming chain with `call` current.
    /// The call counts in flight until its body ends, not only until its head arrives; when it runs
    /// cancellably, a shutdown's grace period stops its body too.
    func stream(
        _ request: URLRequest,
        call: StreamCall,
        operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (StreamedBody, HTTPURLResponse) {
        let isCancellable = try begin(request)
        var bodyEndsCall = false
        defer { if !bodyEndsCall { end() } }
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await StreamCall.$current.withValue(call) {
                isCancellable ? try await sendCancellably(request, operation) : try await operation(request)
            }
        } catch {
            call.discardAll()
            throw error
        }
        let body = call.take(for: response, data: data)
        bodyEndsCall = true
        let pipe = body.pipe
        if isCancellable {
            let (id, cancelNow) = registry.withLock { $0.track(.body(pipe)) }
            pipe.onEnd { [self] _ in
                registry.withLock { $0.untrack(id) }
                end()
            }
            if cancelNow { Cancellable.body(pipe).cancel() }
        } else {
            pipe.onEnd { [self] _ in end() }
        }
        return (body, response)
    }

    private func end() {
        let after = word.wrappingSubtract(Self.oneRequest, ordering: .acquiringAndReleasing).newValue
        guard after < Self.oneRequest, after & Self.closedBit != 0 else { return }
        let waiters = registry.withLock { $0.idleWaiters.takeAll() }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs the chain in a task of its own, so that ``cancelInFlight()`` can cancel the request without
    /// cancelling the caller's task. Costs one task per request; used only when the client opted in.
    /// Kept out of `send` (which is inlined into every call): forming the closure there costs the hot path
    /// about 280 instructions a request even when this branch is not taken (measured with callgrind).
    @inline(never)
    private func sendCancellably(
        _ request: URLRequest,
        through chain: Chain
    ) async throws -> (Data, HTTPURLResponse) {
        try await sendCancellably(request) { try await chain.send($0, from: 0) }
    }

    private func sendCancellably(
        _ request: URLRequest,
        _ operation: @escaping @Sendable (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        // On the task executor shared work prefers (none outside tests): `ManualClock.run` sets one to count the
        // jobs it must wait for before it moves time, and a plain `Task` would not inherit it.
        let task = SharedWork.task { try await operation(request) }
        let (id, cancelNow) = registry.withLock { $0.track(.task(task)) }
        if cancelNow { task.cancel() }
        defer { registry.withLock { $0.untrack(id) } }
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
        let running = registry.withLock { $0.cancelAll() }
        for request in running { request.cancel() }
    }

    /// Suspends until the client is closed and no request is in flight. A cancelled waiter returns early.
    func waitUntilIdle() async {
        // `end()` decrements before taking the registry lock, so a waiter that sees requests in flight
        // (under that lock) is parked before the last of them looks for waiters.
        await registry.waitUntilIdle(in: \.idleWaiters) { _ in isIdle }
    }

    /// Whether the client is closed and no request is in flight.
    private var isIdle: Bool {
        let word = word.load(ordering: .acquiring)
        return word < Self.oneRequest && word & Self.closedBit != 0
    }
}
