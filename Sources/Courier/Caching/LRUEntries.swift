/// The contents of an ``InMemoryHTTPCacheStore``: responses by key and variant, in order of last use, within
/// a limit on their number and on their total size. A value type, changed only under the store's lock and
/// tested synchronously.
///
/// Every operation is O(1) in the number of entries, plus the variants of the key or the keys of the resource
/// it touches: the order of use is a doubly linked list threaded through the dictionary.
struct LRUEntries {
    /// An entry: its key and its variant, the variant compared by its bytes (two tenants' `Vary` values equal as
    /// `String`s are two entries, not one replacing the other).
    struct ID: Hashable {
        let key: HTTPCacheKey
        let variant: String

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.key == rhs.key && lhs.variant.hasSameBytes(as: rhs.variant)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(key)
            hasher.combine(utf8Of: variant)
        }
    }

    private struct Node {
        var response: CachedResponse
        var size: Int
        var newer: ID?
        var older: ID?
    }

    let maximumCount: Int
    let maximumSize: Int
    private var nodes: [ID: Node] = [:]
    private var variants: [HTTPCacheKey: Set<ExactString>] = [:]
    private var keys: [String: Set<HTTPCacheKey>] = [:]
    private var newest: ID?
    private var oldest: ID?
    /// The total ``CachedResponse/size`` of the entries.
    private(set) var size = 0

    init(maximumCount: Int, maximumSize: Int) {
        self.maximumCount = max(0, maximumCount)
        self.maximumSize = max(0, maximumSize)
    }

    var count: Int { nodes.count }

    /// The responses stored for `key`, each marked as just used.
    mutating func responses(for key: HTTPCacheKey) -> [CachedResponse] {
        guard let stored = variants[key] else { return [] }
        var found: [CachedResponse] = []
        for variant in stored {
            let id = ID(key: key, variant: variant.string)
            guard let node = nodes[id] else { continue }
            unlink(id)
            linkAsNewest(id)
            found.append(node.response)
        }
        return found
    }

    /// Stores `response`, replacing the one with its key and variant, and evicts the least recently used
    /// entries until both limits hold again. Returns the evicted entries (a response larger than the size
    /// limit is not stored, and the one it would replace is removed).
    @discardableResult
    mutating func store(_ response: CachedResponse, for key: HTTPCacheKey) -> [ID] {
        let id = ID(key: key, variant: response.variant)
        remove(id)
        let size = response.size
        guard size <= maximumSize, maximumCount > 0 else { return [] }
        nodes[id] = Node(response: response, size: size)
        variants[key, default: []].insert(ExactString(response.variant))
        keys[key.resource, default: []].insert(key)
        self.size += size
        linkAsNewest(id)
        var evicted: [ID] = []
        while nodes.count > maximumCount || self.size > maximumSize, let victim = oldest {
            remove(victim)
            evicted.append(victim)
        }
        return evicted
    }

    /// Removes every entry of `resource`.
    mutating func removeAll(forResource resource: String) {
        for key in keys[resource] ?? [] {
            for variant in variants[key] ?? [] { remove(ID(key: key, variant: variant.string)) }
        }
    }

    /// Every stored response, in no particular order.
    var all: [CachedResponse] { nodes.values.map(\.response) }

    /// The IDs from the most to the least recently used.
    var order: [ID] {
        Array(sequence(first: newest) { $0.flatMap { nodes[$0]?.older } }.compactMap { $0 })
    }

    private mutating func remove(_ id: ID) {
        guard let node = nodes[id] else { return }
        unlink(id)
        nodes[id] = nil
        size -= node.size
        variants[id.key]?.remove(ExactString(id.variant))
        if variants[id.key]?.isEmpty == true {
            variants[id.key] = nil
            keys[id.key.resource]?.remove(id.key)
            if keys[id.key.resource]?.isEmpty == true { keys[id.key.resource] = nil }
        }
    }

    private mutating func unlink(_ id: ID) {
        guard let node = nodes[id] else { return }
        if let newer = node.newer { nodes[newer]?.older = node.older } else { newest = node.older }
        if let older = node.older { nodes[older]?.newer = node.newer } else { oldest = node.newer }
        nodes[id]?.newer = nil
        nodes[id]?.older = nil
    }

    private mutating func linkAsNewest(_ id: ID) {
        nodes[id]?.older = newest
        nodes[id]?.newer = nil
        if let newest { nodes[newest]?.newer = id }
        newest = id
        if oldest == nil { oldest = id }
    }
}
