import Courier

/// Counts how many things are in progress at once and remembers the highest count, to check a
/// concurrency limit from inside a transport.
///
/// ```swift
/// let gauge = ConcurrencyGauge()
/// let transport = MockTransport { _ in
///     gauge.enter()
///     defer { gauge.leave() }
///     return .ok
/// }
/// _ = await client.sendAll(requests, maxConcurrency: 8)
/// #expect(gauge.peak <= 8)
/// ```
public final class ConcurrencyGauge: Sendable {
    private struct State {
        var current = 0
        var peak = 0
        var total = 0
    }

    private let state = LockedState(State())

    /// Creates a gauge at zero.
    public init() {}

    /// How many are in progress now.
    public var current: Int { state.withLock { $0.current } }

    /// The highest number in progress at once so far.
    public var peak: Int { state.withLock { $0.peak } }

    /// How many have entered so far.
    public var total: Int { state.withLock { $0.total } }

    /// Records that one more is in progress.
    public func enter() {
        state.withLock { state in
            state.current += 1
            state.total += 1
            state.peak = max(state.peak, state.current)
        }
    }

    /// Records that one has finished.
    public func leave() {
        state.withLock { state in
            precondition(state.current > 0, "ConcurrencyGauge.leave() without a matching enter()")
            state.current -= 1
        }
    }
}
