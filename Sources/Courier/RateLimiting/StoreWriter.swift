/// Writes what servers said about quotas to a ``RateLimitStore`` off the responses' path: one write at a time,
/// in a task of its own, each bounded by the store timeout, and only the latest quota of a partition when
/// several came while a write was under way. A slow or down store delays no response and grows no queue.
final class StoreWriter: Sendable {
    private struct State {
        /// The latest quota of each partition not written yet, and the order they came in. Partitions are told
        /// apart by their bytes, as every store must: two tenants' keys that are equal as `String`s are two.
        var pending: [ExactString: RateLimitQuota] = [:]
        var order: [ExactString] = []
        var running = false
        /// Callers of ``settled()``, resumed when nothing is pending or being written.
        var idle: [CheckedContinuation<Void, Never>] = []
    }

    private let store: any RateLimitStore
    private let timeout: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state = LockedState(State())

    init(store: any RateLimitStore, timeout: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.store = store
        self.timeout = timeout
        self.sleep = sleep
    }

    /// Writes `quota` for `partition` soon, replacing a quota of the partition not written yet.
    func write(_ quota: RateLimitQuota, for partition: String) {
        let start = state.withLock { state -> Bool in
            let key = ExactString(partition)
            if state.pending.updateValue(quota, forKey: key) == nil { state.order.append(key) }
            defer { state.running = true }
            return !state.running
        }
        guard start else { return }
        SharedWork.start {
            await SharedWork.withoutCallContext { await self.drain() }
        }
    }

    /// Returns once nothing is pending or being written.
    func settled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                guard state.running else { return true }
                state.idle.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func drain() async {
        while true {
            let next = state.withLock { state -> (String, RateLimitQuota)? in
                guard !state.order.isEmpty else { return nil }
                let partition = state.order.removeFirst()
                return state.pending.removeValue(forKey: partition).map { (partition.string, $0) }
            }
            guard let (partition, quota) = next else {
                let idle = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                    // A write that came since the check above is drained by this loop, not a new task.
                    guard state.order.isEmpty else { return nil }
                    state.running = false
                    defer { state.idle = [] }
                    return state.idle
                }
                guard let idle else { continue }
                for continuation in idle { continuation.resume() }
                return
            }
            let store = store
            _ = try? await StoreCall.bounded(
                "the rate-limit store did not answer a write",
                limit: timeout,
                sleep: sleep
            ) {
                try await store.record(quota, for: partition)
            }
        }
    }
}
