import Foundation

/// A short run for CI (`COURIER_BENCHMARK_QUICK=1`): every benchmark stops after a few iterations, so that
/// the suite is exercised (it builds, runs and reaches its checks) without the cost of real measurements.
enum Quick {
    static let isOn = ProcessInfo.processInfo.environment["COURIER_BENCHMARK_QUICK"] != nil

    /// `duration`, or 100 ms in a quick run.
    static func duration(_ duration: Duration) -> Duration {
        isOn ? .milliseconds(100) : duration
    }

    /// `iterations`, or at most 3 in a quick run.
    static func iterations(_ iterations: Int) -> Int {
        isOn ? min(iterations, 3) : iterations
    }
}
