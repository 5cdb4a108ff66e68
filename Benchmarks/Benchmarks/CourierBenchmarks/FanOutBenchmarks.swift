import Benchmark
import BenchmarkSupport
import Courier
import Foundation

/// (8) `sendAll` of 100,000 typed in-memory requests at 64 concurrent: time and peak memory.
///
/// The input is a lazy sequence (never materialized), as the fan-out's documentation recommends for large
/// inputs; the 100,000 decoded results are kept, so the peak includes them.
func registerFanOutBenchmarks() {
    struct User: Decodable, Sendable {
        let id: Int
        let name: String
    }
    let client = Client(baseURL: URL(string: "http://127.0.0.1:8080")!, transport: InMemoryTransport())
    Benchmark(
        "sendAll: 100,000 typed in-memory requests, 64 concurrent",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta, .mallocCountTotal],
            warmupIterations: 1,
            maxDuration: Quick.duration(.seconds(30)),
            maxIterations: Quick.iterations(5)
        )
    ) { benchmark in
        let requests = (0..<100_000).lazy.map { _ in Request<User>.get("/users/42") }
        let results = await client.sendAll(requests, maxConcurrency: 64)
        let failures = results.count { if case .failure = $0 { true } else { false } }
        if results.count != 100_000 || failures != 0 {
            benchmark.error("\(results.count) results, \(failures) failures")
        }
        blackHole(results)
    }
}
