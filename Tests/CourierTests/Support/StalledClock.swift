import CourierTesting

/// A clock whose time moves only when a test moves it, and whose sleepers wake only when cancelled: a timer
/// task that a busy machine has not run yet, however late it is.
final class StalledClock: Clock, Sendable {
    typealias Instant = ManualClock.Instant

    private let offset = Locked<Duration>(.zero)

    /// Counts the calls to `sleep(until:tolerance:)`, so that a test can move time once a timer is asleep.
    let sleeps = Arrivals()

    var now: Instant { Instant(offset: offset.value) }

    var minimumResolution: Duration { .zero }

    func advance(by duration: Duration) {
        offset.withLock { $0 += duration }
    }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        sleeps.arrive()
        // Only cancellation ends it: an hour is far past every suite's time limit.
        try await Task.sleep(for: .seconds(3_600))
    }
}
