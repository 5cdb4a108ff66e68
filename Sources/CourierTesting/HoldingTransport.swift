public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Wraps a transport and holds every request in flight until the test releases it, so a test can have
/// exactly N requests in flight at once — a storm of 401s that must cause one token refresh, a
/// concurrency limit, a graceful shutdown that waits for in-flight work.
///
/// ```swift
/// let holding = HoldingTransport(wrapping: MockTransport { MockRoute.get("/me").replies(.unauthorized()) })
/// let client = Client(baseURL: base, transport: holding, middleware: [.authenticating(with: refresher)])
/// let calls = (0..<100).map { _ in Task { try await client.send(Request<Profile>.get("/me")) } }
/// await holding.waitUntilHolding(100)      // all 100 are in flight, none has an answer yet
/// holding.open()                           // release them together, and let later requests through
/// ```
///
/// Held requests are released in arrival order. A held request whose task is cancelled leaves at once with
/// `CancellationError` and is never sent on.
public final class HoldingTransport: Transport, RequestRecording {
    private struct Held {
        let id: Int
        let request: URLRequest
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var isOpen = false
        var nextID = 0
        var held: [Held] = []
        var peak = 0
        var requests: [URLRequest] = []
        var waiters = CountWaiters()
    }

    private let base: any Transport
    private let state = LockedState(State())

    /// Creates a closed holding transport: every request waits until released.
    ///
    /// - Parameter base: The transport that answers released requests; `200 OK` by default.
    public init(wrapping base: any Transport = MockTransport.ok) {
        self.base = base
    }

    /// Every request received (held or not), in arrival order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// How many requests are held now.
    public var heldCount: Int { state.withLock { $0.held.count } }

    /// The requests held now, in arrival order.
    public var heldRequests: [URLRequest] { state.withLock { $0.held.map(\.request) } }

    /// The most requests held at once so far.
    public var peakHeldCount: Int { state.withLock { $0.peak } }

    /// Whether requests pass straight through (after ``open()``) instead of being held.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Suspends until at least `count` requests are held, or until the waiting task is cancelled.
    ///
    /// Cancellation ends the wait early (without throwing), so that a test whose time limit passes goes on
    /// to fail its expectations instead of hanging.
    ///
    /// - Parameter count: The number of held requests to wait for.
    public func waitUntilHolding(_ count: Int) async {
        await CountWaiters.wait(in: state, at: \.waiters, until: \.held.count, reaches: count)
    }

    /// Releases the `count` longest-held requests (fewer if fewer are held).
    ///
    /// - Parameter count: How many to release.
    /// - Returns: How many were released.
    @discardableResult
    public func release(_ count: Int = 1) -> Int {
        let released = state.withLock { state in
            let released = Array(state.held.prefix(max(count, 0)))
            state.held.removeFirst(released.count)
            return released
        }
        for held in released { held.continuation.resume() }
        return released.count
    }

    /// Releases every held request; requests that arrive later are held again.
    ///
    /// - Returns: How many were released.
    @discardableResult
    public func releaseAll() -> Int {
        release(Int.max)
    }

    /// Releases every held request and lets later requests pass straight through.
    public func open() {
        state.withLock { $0.isOpen = true }
        releaseAll()
    }

    /// Holds requests again from now on (requests already released go on).
    public func close() {
        state.withLock { $0.isOpen = false }
    }

    /// Holds `request` until it is released, then sends it through the wrapped transport.
    ///
    /// - Returns: The wrapped transport's response.
    /// - Throws: `CancellationError` when cancelled while held, the wrapped transport's error, or
    ///   `CourierError` (`.invalidRequest`) for a request that could not be sent safely.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try Task.checkCancellation()
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        let id = state.withLock { state in
            state.requests.append(request)
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, reached) = state.withLock {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.isOpen { return (.success(()), []) }
                    // Checked under the lock: `onCancel` takes the lock after the cancellation flag is set, so
                    // either it finds this request or this check sees the cancellation.
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    state.held.append(Held(id: id, request: request, continuation: continuation))
                    state.peak = max(state.peak, state.held.count)
                    return (nil, state.waiters.takeReached(state.held.count))
                }
                if let outcome { continuation.resume(with: outcome) }
                for waiter in reached { waiter.resume() }
            }
        } onCancel: {
            let held = state.withLock { state -> Held? in
                guard let index = state.held.firstIndex(where: { $0.id == id }) else { return nil }
                return state.held.remove(at: index)
            }
            held?.continuation.resume(throwing: CancellationError())
        }
        return try await base.send(request)
    }
}
