import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bounds how many requests are in flight at once, overall and per host; the state behind
/// ``Middleware/limitingConcurrency(_:)``.
///
/// ```swift
/// let limiter = ConcurrencyLimiter(maxInFlight: 64, perHost: 8)
/// let search = Client(baseURL: searchURL, middleware: [.limitingConcurrency(limiter)])
/// let images = Client(baseURL: imagesURL, middleware: [.limitingConcurrency(limiter)])   // one budget for both
/// ```
///
/// A request that finds no free permit waits in line:
/// - **FIFO-fair**: waiters are served in arrival order; a released permit goes straight to the first
///   waiter, so a newcomer never overtakes the queue.
/// - **Cancellation-aware**: a cancelled waiter leaves the queue at once with `CancellationError` and
///   holds no permit, so none leaks and none is taken from the next in line.
/// - **Per host** (`perHost`): each host (host and port) has its own pool. A request takes its host's
///   permit first and the overall one second, so a request queued behind a busy host never holds an
///   overall permit that another host's request could use.
/// - **Load shedding** (`maxQueued`): when that many requests already wait in a queue, the next one fails
///   at once with ``CourierError/Code/concurrencyLimited`` instead of waiting.
///
/// The state lives under locks in this object and is created once, so sending costs no actor hop. The pools
/// of up to 64 idle hosts are kept for reuse; beyond that, a pool is dropped as soon as nothing is in flight to
/// its host, so memory does not grow with the number of hosts seen.
public final class ConcurrencyLimiter: Sendable {
    /// What a request holds while it is in flight.
    struct Lease {
        let hostKey: String
        let hostPool: AsyncSemaphore?
    }

    /// The most requests in flight at once overall, or `nil` for no overall limit.
    public let maxInFlight: Int?
    /// The most requests in flight at once to one host, or `nil` for no per-host limit.
    public let perHost: Int?
    /// The most requests that may wait in one queue (the overall one, or one host's), or `nil` for no limit.
    public let maxQueued: Int?

    private let overall: AsyncSemaphore?
    /// The per-host pools (their transitions are ``ConcurrencyLimiterStateMachine``'s); the overall pool has its own
    /// lock inside `AsyncSemaphore`.
    private let hosts = LockedState(ConcurrencyLimiterStateMachine<AsyncSemaphore>())

    /// - Parameters:
    ///   - maxInFlight: The most requests in flight at once overall (`nil`: no overall limit); at least 1.
    ///   - perHost: The most requests in flight at once to one host (`nil`: no per-host limit); at least 1.
    ///   - maxQueued: The most requests that may wait in one queue; one more fails at once with
    ///     ``CourierError/Code/concurrencyLimited``. `nil` (the default) lets any number wait; `0` never
    ///     waits.
    public init(maxInFlight: Int? = nil, perHost: Int? = nil, maxQueued: Int? = nil) {
        precondition(maxInFlight != nil || perHost != nil, "give maxInFlight, perHost, or both")
        precondition((maxInFlight ?? 1) > 0, "maxInFlight must be at least 1")
        precondition((perHost ?? 1) > 0, "perHost must be at least 1")
        precondition((maxQueued ?? 0) >= 0, "maxQueued must not be negative")
        self.maxInFlight = maxInFlight
        self.perHost = perHost
        self.maxQueued = maxQueued
        self.overall = maxInFlight.map { AsyncSemaphore(permits: $0, maxWaiters: maxQueued) }
    }

    /// How many requests hold a permit now (overall; with only a per-host limit, summed over hosts).
    public var inFlight: Int {
        if let overall { return overall.capacity - overall.availablePermits }
        return hosts.withLock { hosts in hosts.pools.reduce(0) { $0 + $1.capacity - $1.availablePermits } }
    }

    /// How many requests are waiting for a permit now, in all queues.
    public var waiting: Int {
        let hostWaiters = hosts.withLock { hosts in hosts.pools.reduce(0) { $0 + $1.waiterCount } }
        return hostWaiters + (overall?.waiterCount ?? 0)
    }

    /// Waits for the permits `request` needs: its host's, then the overall one.
    func acquire(for request: URLRequest) async throws -> Lease {
        var hostKey = ""
        var hostPool: AsyncSemaphore?
        if let perHost {
            hostKey = HostKey.of(request.url)
            let maxQueued = self.maxQueued
            let pool = hosts.withLock { hosts in
                hosts.enter(hostKey) { AsyncSemaphore(permits: perHost, maxWaiters: maxQueued) }
            }
            do {
                try await pool.acquire()
            } catch {
                leave(hostKey)
                throw mapped(error, request: request, queue: "for \(hostKey)")
            }
            hostPool = pool
        }
        if let overall {
            do {
                try await overall.acquire()
            } catch {
                if let hostPool {
                    hostPool.release()
                    leave(hostKey)
                }
                throw mapped(error, request: request, queue: "overall")
            }
        }
        return Lease(hostKey: hostKey, hostPool: hostPool)
    }

    /// Returns the permits of `lease`.
    func release(_ lease: Lease) {
        overall?.release()
        if let hostPool = lease.hostPool {
            hostPool.release()
            leave(lease.hostKey)
        }
    }

    private func leave(_ hostKey: String) {
        hosts.withLock { $0.leave(hostKey) }
    }

    private func mapped(_ error: any Error, request: URLRequest, queue: String) -> any Error {
        guard error is AsyncSemaphore.QueueFull else { return error }
        return CourierError(
            .concurrencyLimited,
            message: "too many requests are waiting for a permit (\(maxQueued ?? 0) already queued \(queue))",
            request: request
        )
    }
}
