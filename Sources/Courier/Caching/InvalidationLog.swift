/// The resources unsafe requests invalidated while an ``HTTPCache``'s fetches were in flight: a response that was
/// on its way when its resource was invalidated may describe the resource before the change, and is not stored
/// (nor a `304`'s update kept) as fresh after the invalidation.
///
/// Each invalidation gets the next generation; a fetch notes the generation it began at. An entry is kept only
/// while a fetch that began before it is in flight, so the log holds no more than the resources invalidated
/// during the oldest fetch in flight. Changed only under the cache's lock; nothing here is awaited.
struct InvalidationLog: Sendable {
    private var generation: UInt64 = 0
    /// The generation of the last invalidation of each resource, while a fetch that began before it is in flight.
    private var invalidated: [String: UInt64] = [:]
    /// How many fetches in flight began at each generation.
    private var inFlight: [UInt64: Int] = [:]

    /// Notes a fetch beginning; returns the generation to pass to ``isInvalidated(_:since:)`` and ``end(_:)``.
    mutating func begin() -> UInt64 {
        inFlight[generation, default: 0] += 1
        return generation
    }

    /// Notes the end of a fetch that began at `begun`, and forgets what no fetch in flight needs.
    mutating func end(_ begun: UInt64) {
        if let count = inFlight[begun], count > 1 { inFlight[begun] = count - 1 } else { inFlight[begun] = nil }
        guard let oldest = inFlight.keys.min() else {
            invalidated.removeAll()
            return
        }
        if invalidated.values.contains(where: { $0 <= oldest }) {
            invalidated = invalidated.filter { $0.value > oldest }
        }
    }

    /// Notes that `resource` is invalidated now (before its entries are removed).
    mutating func invalidate(_ resource: String) {
        generation &+= 1
        if !inFlight.isEmpty { invalidated[resource] = generation }
    }

    /// The generation of the last invalidation of `resource` while a fetch that began before it is still in
    /// flight, or `nil`. Callers that see different values must not share a fetch: the one that began before the
    /// invalidation may bring back the resource as it was before the change.
    func lastInvalidation(of resource: String) -> UInt64? {
        invalidated[resource]
    }

    /// Whether `resource` was invalidated after a fetch that began at `begun` began.
    func isInvalidated(_ resource: String, since begun: UInt64) -> Bool {
        (invalidated[resource] ?? 0) > begun
    }
}
