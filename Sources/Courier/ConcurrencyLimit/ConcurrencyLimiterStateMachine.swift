/// The per-host pools of a ``ConcurrencyLimiter``, as a value: which pool a request to a host uses, and when an
/// idle pool is dropped.
///
/// `Pool` is the per-host semaphore; tests use plain values. The limiter keeps the machine under its lock;
/// waiting on a pool happens outside it.
///
/// The rules:
/// - A host's pool is made when a request to it enters and none exists; every request that enters uses it
///   until it leaves (waiting for a permit or holding one).
/// - While the table holds at most `idlePoolsKept` hosts, a pool whose last user leaves is kept for reuse;
///   beyond that, it is dropped as soon as its last user leaves, so memory does not grow with the number of
///   hosts seen.
struct ConcurrencyLimiterStateMachine<Pool> {
    private struct Entry {
        let pool: Pool
        /// Requests waiting for or holding a permit of this pool.
        var users: Int
    }

    /// How many hosts keep their pool when nothing is in flight to them.
    let idlePoolsKept: Int
    private var hosts: [String: Entry] = [:]

    init(idlePoolsKept: Int = 64) {
        self.idlePoolsKept = idlePoolsKept
    }

    /// The pools kept now.
    var pools: some Collection<Pool> { hosts.values.lazy.map(\.pool) }

    /// A request to `host` enters: returns the host's pool, made with `makePool` if the host has none.
    mutating func enter(_ host: String, makePool: () -> Pool) -> Pool {
        if hosts[host] == nil {
            hosts[host] = Entry(pool: makePool(), users: 0)
        }
        hosts[host]!.users += 1
        return hosts[host]!.pool
    }

    /// A request to `host` that entered leaves (its permit released, or its wait given up).
    mutating func leave(_ host: String) {
        guard var entry = hosts[host] else { preconditionFailure("left host \(host) that no request entered") }
        entry.users -= 1
        // Making a pool costs an allocation and a mutex; keep idle ones while there are few hosts.
        if entry.users == 0, hosts.count > idlePoolsKept {
            hosts[host] = nil
        } else {
            hosts[host] = entry
        }
    }
}
