// Courier's benchmarks, numbered as in issue 7 and Benchmarks/RESULTS.md:
// (1)–(3) ChainBenchmarks, (4)–(5) StackBenchmarks, (6) OpenAPIPeerBenchmarks, (7) RefreshStormBenchmarks,
// (8) FanOutBenchmarks, (9) EndToEndBenchmarks, (10) NginxBenchmarks (end to end against nginx, issue 17),
// (11) FleetStoreBenchmarks (the fleet's PostgreSQL stores against the in-memory ones, issue 28; opt-in).
//
// "Paired:" benchmarks time two variants side by side (see `Paired`); their medians are the figures
// that RESULTS.md compares against the targets. The others report wall time and allocations per request.

import Benchmark

let benchmarks: @Sendable () -> Void = {
    registerChainBenchmarks()
    registerStackBenchmarks()
    registerOpenAPIPeerBenchmarks()
    registerRefreshStormBenchmarks()
    registerFanOutBenchmarks()
    registerEndToEndBenchmarks()
    registerEndToEndBreakdown()
    registerURLSessionBreakdown()
    registerNginxBenchmarks()
    #if COURIER_BENCHMARK_POSTGRES
    registerFleetStoreBenchmarks()
    #endif
}
