/// A small, fast, seeded pseudo-random number generator (SplitMix64), so fault injection and other test
/// randomness is the same on every run.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let roll = random.nextUnitInterval()          // the same value every run
/// let index = Int.random(in: 0..<10, using: &random)
/// ```
///
/// Not for cryptography.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    /// The generator's state; the next output is computed from it.
    public private(set) var state: UInt64

    /// Creates a generator. Equal seeds give equal sequences.
    ///
    /// - Parameter seed: Any value.
    public init(seed: UInt64) {
        state = seed
    }

    /// Returns the next 64 random bits.
    ///
    /// - Returns: A value spread evenly over all of `UInt64`.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// Returns a value in `0 ..< 1`, spread evenly, computed the same way on every platform.
    ///
    /// - Returns: A double with 53 random bits.
    public mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// Scrambles the bits of `value` (the SplitMix64 output function): nearby inputs give unrelated outputs.
    ///
    /// - Returns: The scrambled value.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A generator for one item of a seeded stream (for example request `n`, fault `k`), independent of
    /// the order in which items are drawn.
    ///
    /// - Parameters:
    ///   - seed: The stream's seed.
    ///   - keys: What identifies the item.
    /// - Returns: A generator for that item.
    public static func derived(seed: UInt64, _ keys: UInt64...) -> SplitMix64 {
        var value = mix(seed)
        for key in keys {
            value = mix(value ^ mix(key &+ 0x9E37_79B9_7F4A_7C15))
        }
        return SplitMix64(seed: value)
    }
}
