import Benchmark

/// Side-by-side timing of two ways of doing the same work, robust to a shared, noisy machine.
///
/// Each benchmark iteration times a block of `calls` calls of the baseline and of the candidate in the order
/// A B B A, so that a slow drift in the machine's load falls on both alike. It records, per call:
/// - `baseline ns` and `candidate ns`;
/// - `overhead ns`: what the candidate costs on top of the baseline, divided by `per` (for example the
///   number of layers, to get the cost of one layer); clamped at zero, as the histograms hold no negatives;
/// - `ratio ‰`: the baseline's time over the candidate's, in thousandths (the candidate's throughput
///   relative to the baseline's: 1000 means as fast).
///
/// The figures to quote are the medians (p50) of these per-iteration values.
enum Paired {
    static let baselineNanoseconds = BenchmarkMetric.custom("baseline ns/call", useScalingFactor: false)
    static let candidateNanoseconds = BenchmarkMetric.custom("candidate ns/call", useScalingFactor: false)
    static let overheadNanoseconds = BenchmarkMetric.custom("overhead ns/unit", useScalingFactor: false)
    static let ratioPermille = BenchmarkMetric.custom(
        "throughput ratio ‰",
        polarity: .prefersLarger,
        useScalingFactor: false
    )

    static let metrics = [baselineNanoseconds, candidateNanoseconds, overheadNanoseconds, ratioPermille]

    /// Registers a paired benchmark.
    ///
    /// - Parameters:
    ///   - name: The benchmark's name.
    ///   - calls: Calls per timed block.
    ///   - per: What the overhead is divided by (1 for the whole difference).
    ///   - maxDuration: How long to keep iterating.
    ///   - maxIterations: The most iterations.
    ///   - setup: Runs once before the iterations (start a server, say).
    ///   - teardown: Runs once after them.
    ///   - baseline: Makes `calls` calls of the baseline.
    ///   - candidate: Makes `calls` calls of the candidate.
    static func register(
        _ name: String,
        calls: Int,
        per: Int = 1,
        maxDuration: Duration = .seconds(3),
        maxIterations: Int = 1_000,
        setup: (@Sendable () async throws -> Void)? = nil,
        teardown: (@Sendable () async throws -> Void)? = nil,
        baseline: @escaping @Sendable (Int) async throws -> Void,
        candidate: @escaping @Sendable (Int) async throws -> Void
    ) {
        Benchmark(
            name,
            configuration: .init(
                metrics: metrics,
                warmupIterations: 2,
                maxDuration: Quick.duration(maxDuration),
                maxIterations: Quick.iterations(maxIterations),
                setup: setup,
                teardown: teardown
            )
        ) { benchmark in
            let clock = ContinuousClock()
            var baselineTime = Duration.zero
            var candidateTime = Duration.zero
            baselineTime += try await clock.measure { try await baseline(calls) }
            candidateTime += try await clock.measure { try await candidate(calls) }
            candidateTime += try await clock.measure { try await candidate(calls) }
            baselineTime += try await clock.measure { try await baseline(calls) }

            let baselinePerCall = nanoseconds(baselineTime) / Double(2 * calls)
            let candidatePerCall = nanoseconds(candidateTime) / Double(2 * calls)
            benchmark.measurement(baselineNanoseconds, Int(baselinePerCall.rounded()))
            benchmark.measurement(candidateNanoseconds, Int(candidatePerCall.rounded()))
            let overhead = (candidatePerCall - baselinePerCall) / Double(per)
            benchmark.measurement(overheadNanoseconds, max(0, Int(overhead.rounded())))
            benchmark.measurement(ratioPermille, Int((1000 * baselinePerCall / candidatePerCall).rounded()))
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}
