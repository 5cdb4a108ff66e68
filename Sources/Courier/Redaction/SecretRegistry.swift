import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Bionic)
import Bionic
#endif

/// The secret values Courier knows (the tokens it holds, and what ``Redaction/registerSecret(_:)`` is
/// given), and the scan that removes them from a text.
///
/// **Bounded.** It keeps the `capacity` most recently registered distinct values; registering a value again
/// makes it recent again. A value Courier holds (a middleware's fixed token, a refresher's current token) is
/// *pinned* instead, with a ``SecretPin``: it stays, outside the `capacity`, until its last pin is released,
/// so no number of later registrations (a signature per request) can push it out while it is in use.
///
/// **Cheap to scan.** With nothing registered a scan is one atomic load. Otherwise every secret is indexed by
/// its first 8 bytes (and by the first 8 bytes of its percent-encoded and JSON-escaped forms when they
/// differ): the scan reads 8 bytes at each position of the text, tests two bits of a 64-kbit filter (≈ 1 %
/// false positives with 1,024 secrets), and only on a hit looks the prefix up. The secrets under one prefix
/// are kept sorted, so the candidates are narrowed by binary search, character by character, instead of
/// being compared one after another: many tokens that share a long prefix (JWTs from one issuer all start
/// with the same header) cost `O(length × log count)` per occurrence, not `O(length × count)`. The work is
/// linear in the text's length, whatever the number of secrets.
///
/// **Encodings.** A candidate is compared character by character, accepting each character literally,
/// percent-encoded (any number of times: `%2B`, `%252B`), as `+` for a space, or JSON-escaped (`\/`, `\"`,
/// `\\`), so a secret is found in a URL, a form body or a JSON string however its characters were written.
/// The *first 8* characters must be written the same way throughout (all literal, or all encoded by one of
/// the indexed forms), which is what encoders do.
///
/// **Thread safety.** A read-write lock: scans run concurrently; registering a new value takes the lock
/// exclusively (a few microseconds); re-registering a recent value only reads. No state machine: this is a
/// data structure (a bounded most-recently-used set with an index), with no waiters and nothing to do after a
/// change; `KnownSecretTests` and `RedactionModelTests` check what it finds.
final class SecretRegistry: @unchecked Sendable {
    // @unchecked Sendable: every stored property except `liveCount` is only touched with `lock` held
    // (shared for reading, exclusive for writing); `liveCount` is atomic.

    /// The registry every redaction uses.
    static let shared = SecretRegistry(capacity: Redaction.maximumRegisteredSecrets)

    /// How long an indexed prefix is; also the shortest secret.
    static let prefixLength = 8

    let capacity: Int
    private let lock = ReadWriteLock()
    private let liveCount = Atomic<Int>(0)

    fileprivate struct Slot {
        var value: String = ""
        /// The bytes compared (the value's UTF-8, at most ``Redaction/maximumSecretLength`` of them).
        var bytes: [UInt8] = []
        /// The prefixes under which the slot is indexed.
        var keys: [UInt64] = []
        var newer = -1
        var older = -1
        /// The registration count when the value was last made recent.
        var stamp: UInt64 = 0
        /// How many ``SecretPin``s hold the value; a pinned slot is not in the recency list.
        var pins = 0
    }

    private var slots: [Slot] = []
    /// By bytes (``ExactString``): a value canonically equivalent to one registered, but different in bytes, is
    /// another secret, with bytes of its own to find.
    private var slotOfValue: [ExactString: Int] = [:]
    private var freeSlots: [Int] = []
    private var newest = -1
    private var oldest = -1
    private var registrations: UInt64 = 0
    /// How many slots are pinned (they do not count against `capacity`).
    private var pinnedSlots = 0
    /// Prefix → slots indexed under it, sorted by their bytes.
    private var candidates: [UInt64: [Int]] = [:]
    private var filter = PrefixFilter()

    init(capacity: Int) {
        precondition(capacity >= 1, "a secret registry holds at least one value")
        self.capacity = capacity
    }

    /// How many values are registered.
    var count: Int { liveCount.load(ordering: .relaxed) }

    /// Registers `value`, or makes it recent again; values shorter than ``prefixLength`` bytes are ignored.
    func register(_ value: String) {
        guard let value = Self.kept(value) else { return }
        // Re-registering a value registered recently (within the newest half) changes nothing that matters:
        // it cannot be dropped before `capacity / 2` other values are registered. Nor does re-registering a
        // pinned one. Only a read.
        let isRecent = lock.withReadLock {
            slotOfValue[ExactString(value)].map {
                slots[$0].pins > 0 || registrations &- slots[$0].stamp < UInt64(max(capacity / 2, 1))
            } ?? false
        }
        if isRecent { return }
        lock.withWriteLock { insert(value) }
    }

    /// Registers `value` and keeps it until as many ``unpin(_:)`` calls: it is not dropped for newer values.
    ///
    /// - Returns: Whether it was pinned (`false` for a value shorter than ``prefixLength`` bytes).
    func pin(_ value: String) -> Bool {
        guard let value = Self.kept(value) else { return false }
        lock.withWriteLock {
            if slotOfValue[ExactString(value)] == nil { insert(value, evicting: false) }
            let slot = slotOfValue[ExactString(value)]!
            if slots[slot].pins == 0 {
                unlink(slot)
                pinnedSlots += 1
            }
            slots[slot].pins += 1
        }
        return true
    }

    /// Releases one ``pin(_:)`` of `value`; after the last, the value is an ordinary registration, the most
    /// recent one.
    func unpin(_ value: String) {
        guard let value = Self.kept(value) else { return }
        lock.withWriteLock {
            guard let slot = slotOfValue[ExactString(value)], slots[slot].pins > 0 else { return }
            slots[slot].pins -= 1
            guard slots[slot].pins == 0 else { return }
            pinnedSlots -= 1
            registrations &+= 1
            slots[slot].stamp = registrations
            linkAsNewest(slot)
            while slotOfValue.count - pinnedSlots > capacity, oldest >= 0 {
                remove(oldest)
            }
        }
    }

    /// How many pins hold `value` (tests).
    func pinCount(of value: String) -> Int {
        guard let value = Self.kept(value) else { return 0 }
        return lock.withReadLock { slotOfValue[ExactString(value)].map { slots[$0].pins } ?? 0 }
    }

    /// The part of `value` the registry keeps (its first ``Redaction/maximumSecretLength`` bytes), or `nil` for a
    /// value too short to register.
    private static func kept(_ value: String) -> String? {
        guard value.utf8.count >= prefixLength else { return nil }
        return value.utf8.count > Redaction.maximumSecretLength
            ? String(decoding: value.utf8.prefix(Redaction.maximumSecretLength), as: UTF8.self) : value
    }

    /// Returns `text` with every registered value replaced by `placeholder`, or `nil` when none occurs.
    func scrub(_ text: UnsafeBufferPointer<UInt8>, placeholder: [UInt8]) -> [UInt8]? {
        guard count > 0, text.count >= Self.prefixLength, let base = text.baseAddress else { return nil }
        return lock.withReadLock {
            // Locals, so the loop does not go through the class's properties (and their exclusivity checks).
            let candidates = self.candidates
            let slots = self.slots
            return filter.bits.withUnsafeBufferPointer { bits -> [UInt8]? in
                var output: [UInt8]?
                var copied = 0
                var index = 0
                let last = text.count - Self.prefixLength
                while index <= last {
                    let key = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                    // The filter's two bits (see `PrefixFilter`), inline: this runs for every byte of the text.
                    let hash = key &* PrefixFilter.multiplier
                    let first = Int(truncatingIfNeeded: hash >> 48)
                    let second = Int(truncatingIfNeeded: (hash >> 32) & 0xFFFF)
                    guard bits[first >> 6] & (1 &<< UInt64(first & 63)) != 0,
                        bits[second >> 6] & (1 &<< UInt64(second & 63)) != 0,
                        let bucket = candidates[key],
                        let end = slots.withUnsafeBufferPointer({ Self.match(bucket, slots: $0, in: text, at: index) })
                    else {
                        index += 1
                        continue
                    }
                    if output == nil {
                        output = []
                        output!.reserveCapacity(text.count)
                    }
                    output!.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied..<index]))
                    output!.append(contentsOf: placeholder)
                    // A secret that starts inside this one and ends after it (two registered values overlapping in
                    // the text) is removed with it: resuming at `end` would leave its tail.
                    let covered = Self.coveredEnd(
                        from: index,
                        to: end,
                        in: text,
                        bits: bits,
                        candidates: candidates,
                        slots: slots
                    )
                    copied = covered
                    index = covered
                }
                if output != nil {
                    output!.append(contentsOf: UnsafeBufferPointer(rebasing: text[copied...]))
                }
                return output
            }
        }
    }

    /// Where the text a match covers ends: `end`, or later when another secret starts inside the match (after
    /// `start`) and runs past it, and so on. Not inlined: it runs only after a match, and kept out of the scan's
    /// loop it leaves that loop's code as it was.
    @inline(never)
    private static func coveredEnd(
        from start: Int,
        to end: Int,
        in text: UnsafeBufferPointer<UInt8>,
        bits: UnsafeBufferPointer<UInt64>,
        candidates: [UInt64: [Int]],
        slots: [Slot]
    ) -> Int {
        let last = text.count - prefixLength
        var covered = end
        var inner = start + 1
        while inner < covered, inner <= last {
            if let further = matchEnd(at: inner, in: text, bits: bits, candidates: candidates, slots: slots),
                further > covered
            {
                covered = further
            }
            inner += 1
        }
        return covered
    }

    /// Where the longest secret that occurs in `text` at `index` ends, if one does: the scan's test, for the
    /// positions inside a match.
    private static func matchEnd(
        at index: Int,
        in text: UnsafeBufferPointer<UInt8>,
        bits: UnsafeBufferPointer<UInt64>,
        candidates: [UInt64: [Int]],
        slots: [Slot]
    ) -> Int? {
        let key = UnsafeRawPointer(text.baseAddress! + index).loadUnaligned(as: UInt64.self)
        let hash = key &* PrefixFilter.multiplier
        let first = Int(truncatingIfNeeded: hash >> 48)
        let second = Int(truncatingIfNeeded: (hash >> 32) & 0xFFFF)
        guard bits[first >> 6] & (1 &<< UInt64(first & 63)) != 0,
            bits[second >> 6] & (1 &<< UInt64(second & 63)) != 0,
            let bucket = candidates[key]
        else { return nil }
        return slots.withUnsafeBufferPointer { match(bucket, slots: $0, in: text, at: index) }
    }

    // MARK: Writing (exclusive lock held)

    /// Adds `value` as the most recent registration (or makes it so); `evicting: false` when it is about to be
    /// pinned, so that it takes no ordinary registration's place.
    private func insert(_ value: String, evicting: Bool = true) {
        registrations &+= 1
        if let slot = slotOfValue[ExactString(value)] {
            // A pinned value is not in the recency list, and stays.
            guard slots[slot].pins == 0 else { return }
            unlink(slot)
            linkAsNewest(slot)
            slots[slot].stamp = registrations
            return
        }
        if evicting, slotOfValue.count - pinnedSlots >= capacity, oldest >= 0 {
            remove(oldest)
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slots.append(Slot())
            slot = slots.count - 1
        }
        let bytes = Array(value.utf8.prefix(Redaction.maximumSecretLength))
        let keys = Self.prefixKeys(of: bytes)
        slots[slot] = Slot(value: value, bytes: bytes, keys: keys, stamp: registrations)
        slotOfValue[ExactString(value)] = slot
        linkAsNewest(slot)
        for key in keys {
            filter.insert(key)
            var bucket = candidates[key, default: []]
            var low = 0
            var high = bucket.count
            while low < high {
                let middle = (low + high) / 2
                if slots[bucket[middle]].bytes.lexicographicallyPrecedes(bytes) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            bucket.insert(slot, at: low)
            candidates[key] = bucket
        }
        liveCount.store(slotOfValue.count, ordering: .relaxed)
    }

    private func remove(_ slot: Int) {
        unlink(slot)
        for key in slots[slot].keys {
            filter.remove(key)
            candidates[key]?.removeAll { $0 == slot }
            if candidates[key]?.isEmpty == true { candidates[key] = nil }
        }
        slotOfValue[ExactString(slots[slot].value)] = nil
        slots[slot] = Slot()
        freeSlots.append(slot)
        liveCount.store(slotOfValue.count, ordering: .relaxed)
    }

    private func unlink(_ slot: Int) {
        let (newer, older) = (slots[slot].newer, slots[slot].older)
        if newer >= 0 { slots[newer].older = older } else { newest = older }
        if older >= 0 { slots[older].newer = newer } else { oldest = newer }
        slots[slot].newer = -1
        slots[slot].older = -1
    }

    private func linkAsNewest(_ slot: Int) {
        slots[slot].older = newest
        slots[slot].newer = -1
        if newest >= 0 { slots[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    // MARK: Matching

    /// The prefixes a secret is indexed under: its first 8 bytes, and, when they hold a character that an
    /// encoder may change, the first 8 bytes of its percent-encoded (upper- and lowercase hex, and twice),
    /// form-encoded and JSON-escaped forms.
    static func prefixKeys(of bytes: [UInt8]) -> [UInt64] {
        let head = bytes.prefix(prefixLength)
        var forms = [Array(head)]
        if head.contains(where: { !isUnreserved($0) }) {
            forms.append(percentEncoded(head, hex: upperHex))
            forms.append(percentEncoded(head, hex: lowerHex))
            forms.append(percentEncoded(percentEncoded(head, hex: upperHex), hex: upperHex))
            forms.append(
                head.flatMap { $0 == UInt8(ascii: " ") ? [UInt8(ascii: "+")] : percentEncoded([$0], hex: upperHex) }
            )
            forms.append(
                head.flatMap { byte -> [UInt8] in
                    byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                        ? [UInt8(ascii: "\\"), byte] : [byte]
                }
            )
        }
        var keys: [UInt64] = []
        for form in forms where form.count >= prefixLength {
            let key = form.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// Where the longest secret of `bucket` that occurs in `text` at `start` ends, each of its characters
    /// written literally or encoded.
    ///
    /// `bucket` is sorted by the secrets' bytes, so the secrets that agree with the text's first `depth`
    /// characters are a contiguous range, narrowed by binary search on the next character.
    private static func match(
        _ bucket: [Int],
        slots: UnsafeBufferPointer<Slot>,
        in text: UnsafeBufferPointer<UInt8>,
        at start: Int
    ) -> Int? {
        var low = 0
        var high = bucket.count
        var depth = 0
        var position = start
        var longest: Int?
        while low < high {
            // Shorter secrets sort first: those that end here have matched completely.
            while low < high && slots[bucket[low]].bytes.count == depth {
                longest = position
                low += 1
            }
            guard low < high, position < text.count else { break }
            let reading = Reading(of: text, at: position)
            var range = equalRange(bucket, slots, low..<high, depth: depth, character: reading.character)
            var next = reading.end
            if range.isEmpty, let alternative = reading.alternative {
                range = equalRange(bucket, slots, low..<high, depth: depth, character: alternative)
                next = reading.alternativeEnd
            }
            guard !range.isEmpty else { break }
            (low, high, position, depth) = (range.lowerBound, range.upperBound, next, depth + 1)
        }
        return longest
    }

    /// The secrets in `range` of `bucket` whose byte at `depth` is `character`.
    private static func equalRange(
        _ bucket: [Int],
        _ slots: UnsafeBufferPointer<Slot>,
        _ range: Range<Int>,
        depth: Int,
        character: UInt8
    ) -> Range<Int> {
        // Secrets that share a long prefix (a JWT header) agree on most characters: no search then.
        if slots[bucket[range.lowerBound]].bytes[depth] == character
            && slots[bucket[range.upperBound - 1]].bytes[depth] == character
        {
            return range
        }
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if slots[bucket[middle]].bytes[depth] < character { low = middle + 1 } else { high = middle }
        }
        let first = low
        high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if slots[bucket[middle]].bytes[depth] <= character { low = middle + 1 } else { high = middle }
        }
        return first..<low
    }

    /// The character the text at a position stands for, and the other one it may stand for: a
    /// percent-escape (`%2B`, `%252B`) or the `%` itself, `+` or a space, a JSON escape (`\/`) or the `\`.
    private struct Reading {
        var character: UInt8
        var end: Int
        var alternative: UInt8?
        var alternativeEnd = 0

        init(of text: UnsafeBufferPointer<UInt8>, at position: Int) {
            let byte = text[position]
            (character, end, alternative) = (byte, position + 1, nil)
            switch byte {
            case UInt8(ascii: "%"):
                guard let (decoded, escapeEnd) = SecretRegistry.decodedEscape(in: text, at: position) else { return }
                (character, end, alternative, alternativeEnd) = (decoded, escapeEnd, byte, position + 1)
            case UInt8(ascii: "+"):
                (alternative, alternativeEnd) = (UInt8(ascii: " "), position + 1)
            case UInt8(ascii: "\\"):
                guard position + 1 < text.count else { return }
                let next = text[position + 1]
                guard next == UInt8(ascii: "/") || next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") else {
                    return
                }
                (character, end, alternative, alternativeEnd) = (next, position + 2, byte, position + 1)
            default:
                break
            }
        }
    }

    /// The byte a percent-escape at `index` (`%2B`, `%252B`, …) stands for, and where the escape ends.
    fileprivate static func decodedEscape(in text: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt8, Int)? {
        var k = index + 1
        while k + 3 < text.count, text[k] == UInt8(ascii: "2"), text[k + 1] == UInt8(ascii: "5"),
            hexValue(text[k + 2]) != nil, hexValue(text[k + 3]) != nil
        {
            k += 2
        }
        guard k + 1 < text.count, let high = hexValue(text[k]), let low = hexValue(text[k + 1]) else { return nil }
        return (high << 4 | low, k + 2)
    }

    private static let upperHex = Array("0123456789ABCDEF".utf8)
    private static let lowerHex = Array("0123456789abcdef".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func percentEncoded(_ bytes: some Sequence<UInt8>, hex: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        for byte in bytes {
            if isUnreserved(byte) {
                result.append(byte)
            } else {
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A counting Bloom filter over 8-byte prefixes: two bits of 65,536 per prefix. Readers test the bits;
/// the counts let a prefix be removed.
private struct PrefixFilter {
    private static let bitCount = 1 << 16
    /// The bits readers test: bits `hash >> 48` and `(hash >> 32) & 0xFFFF` of `hash = key × multiplier`.
    private(set) var bits = [UInt64](repeating: 0, count: bitCount / 64)
    private var counts = [UInt16](repeating: 0, count: bitCount)

    static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    private static func positions(_ key: UInt64) -> (Int, Int) {
        let hash = key &* multiplier
        return (Int(truncatingIfNeeded: hash >> 48), Int(truncatingIfNeeded: (hash >> 32) & 0xFFFF))
    }

    mutating func insert(_ key: UInt64) {
        let (first, second) = Self.positions(key)
        for position in [first, second] {
            counts[position] &+= 1
            bits[position >> 6] |= 1 << UInt64(position & 63)
        }
    }

    mutating func remove(_ key: UInt64) {
        let (first, second) = Self.positions(key)
        for position in [first, second] {
            counts[position] &-= 1
            if counts[position] == 0 { bits[position >> 6] &= ~(1 << UInt64(position & 63)) }
        }
    }
}

/// A `pthread_rwlock_t`: many readers at once, or one writer. (Like ``LockedState``, a pthread lock so the
/// thread sanitizer sees it.)
private final class ReadWriteLock: @unchecked Sendable {
    // @unchecked Sendable: the lock itself is the synchronization.
    private let rwlock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        rwlock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        // `pthread_rwlock_init` initializes the (trivial) memory (see `LockedState` for why not `pthread_rwlock_t()`).
        let status = pthread_rwlock_init(rwlock, nil)
        precondition(status == 0, "pthread_rwlock_init failed with \(status)")
    }

    deinit {
        pthread_rwlock_destroy(rwlock)
        rwlock.deallocate()
    }

    func withReadLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    func withWriteLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }
}

/// Keeps a secret Courier holds in ``SecretRegistry/shared`` for as long as the pin lives (see
/// ``SecretRegistry/pin(_:)``): a middleware captures the pin of its token, so the token is found in every
/// text until the middleware is gone, however many values are registered meanwhile.
final class SecretPin: Sendable {
    let value: String
    private let registry: SecretRegistry
    private let isPinned: Bool

    init(_ value: String, registry: SecretRegistry = .shared) {
        self.value = value
        self.registry = registry
        self.isPinned = registry.pin(value)
    }

    deinit {
        if isPinned { registry.unpin(value) }
    }
}

/// The secrets a changing holder has now (a refresher's current token and refresh token, a store's), pinned;
/// holding newer ones releases the old, which stay registered as ordinary, recent values.
final class HeldSecrets: Sendable {
    private let held = LockedState<(pins: [SecretPin], version: Int)>(([], .min))
    private let registry: SecretRegistry

    init(registry: SecretRegistry = .shared) {
        self.registry = registry
    }

    /// Holds `value` and `other` (when there is one) instead of what was held, unless what is held is of a later
    /// `version` (callers hold outside their own locks, so two may arrive out of order). Values equal to those
    /// held (byte for byte) cost a comparison under a lock.
    func hold(_ value: String, _ other: String? = nil, version: Int = .max) {
        let released: [SecretPin]? = held.withLock { held in
            guard version >= held.version else { return nil }
            held.version = version
            let count = other == nil ? 1 : 2
            if held.pins.count == count, ExactString(held.pins[0].value) == ExactString(value),
                other.map({ ExactString(held.pins[1].value) == ExactString($0) }) ?? true
            {
                return nil
            }
            let old = held.pins
            held.pins = [SecretPin(value, registry: registry)]
            if let other { held.pins.append(SecretPin(other, registry: registry)) }
            return old
        }
        // The old pins are released here, outside the lock.
        _ = released
    }

    /// The values held now (tests).
    var values: [String] { held.withLock { $0.pins.map(\.value) } }
}

/// The last ``capacity`` distinct secrets a provider returned (the tokens of a few tenants, two during a
/// rotation), pinned: one already among them costs comparisons under a lock and no registry lock; a new one
/// pins it and releases the least recent.
final class RecentSecrets: Sendable {
    private let pins = LockedState<[SecretPin]>([])
    private let registry: SecretRegistry
    let capacity: Int

    init(capacity: Int = 16, registry: SecretRegistry = .shared) {
        self.capacity = capacity
        self.registry = registry
    }

    /// Pins `value` as the most recent, releasing the least recent beyond ``capacity``.
    func hold(_ value: String) {
        let released: SecretPin? = pins.withLock { pins in
            if let index = pins.firstIndex(where: { ExactString($0.value) == ExactString(value) }) {
                if index > 0 { pins.insert(pins.remove(at: index), at: 0) }
                return nil
            }
            pins.insert(SecretPin(value, registry: registry), at: 0)
            return pins.count > capacity ? pins.removeLast() : nil
        }
        // Released here, outside the lock.
        _ = released
    }

    /// The values held now, most recent first (tests).
    var values: [String] { pins.withLock { $0.map(\.value) } }
}
