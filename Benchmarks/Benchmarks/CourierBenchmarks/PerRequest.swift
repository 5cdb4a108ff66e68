import Benchmark

/// Benchmarks that report figures per request: each iteration makes 1,000 calls, and package-benchmark
/// divides the wall time and the allocation count by that.
enum PerRequest {
    static let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal]

    /// Registers a benchmark whose body makes `calls` calls (it is handed the number).
    ///
    /// - Parameters:
    ///   - name: The benchmark's name.
    ///   - maxDuration: How long to keep iterating.
    ///   - body: Makes the given number of calls.
    static func register(
        _ name: String,
        maxDuration: Duration = .seconds(2),
        _ body: @escaping @Sendable (Int) async throws -> Void
    ) {
        Benchmark(
            name,
            configuration: .init(
                metrics: metrics,
                warmupIterations: 3,
                scalingFactor: .kilo,
                maxDuration: Quick.duration(maxDuration),
                maxIterations: Quick.iterations(100_000)
            )
        ) { benchmark in
            try await body(benchmark.scaledIterations.count)
        }
    }
}
