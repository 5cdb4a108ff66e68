import Benchmark
import BenchmarkSupport
import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// (7) The refresh storm: 10,000 concurrent requests whose token has expired, through
/// `counting → authenticating(with: TokenRefresher)` over an in-memory server that accepts only the fresh
/// token.
///
/// The refresh is held until every one of the 10,000 requests has been rejected, so every request waits on
/// the one refresh and is sent a second time: the worst case, 20,000 transport calls. Each iteration checks
/// what the design promises (one refresh, every request succeeds, the counter back to 0) and reports an error
/// otherwise, so the figures are only ever for a storm that behaved.
func registerRefreshStormBenchmarks() {
    Benchmark(
        "Refresh storm: 10,000 concurrent requests with an expired token",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .mallocCountTotal],
            warmupIterations: 1,
            maxDuration: Quick.duration(.seconds(20)),
            maxIterations: Quick.iterations(30)
        )
    ) { benchmark in
        let total = 10_000
        let rejected = Arrivals()
        let refresher = TokenRefresher(token: .init("expired")) { _ in
            await rejected.wait(for: total)
            return .init("fresh")
        }
        let counter = RequestCounter()
        let client = Client(
            baseURL: Fixtures.url,
            transport: TokenCheckingTransport(accepting: "Bearer fresh") { rejected.arrive() },
            middleware: [.counting(counter), .authenticating(with: refresher)]
        )
        let request = Fixtures.request
        let succeeded = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<total {
                group.addTask { (try? await client.send(request))?.1.statusCode == 200 }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let counts = counter.snapshot
        if refresher.refreshCount != 1 || succeeded != total || counts.inFlight != 0 {
            benchmark.error(
                "\(refresher.refreshCount) refreshes, \(succeeded) of \(total) succeeded, \(counts.inFlight) in flight"
            )
        }
    }
}
