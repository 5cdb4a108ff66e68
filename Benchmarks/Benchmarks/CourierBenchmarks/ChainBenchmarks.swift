import Benchmark
import BenchmarkSupport
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// (1) pass-through layers, (2) header-setting layers, (3) `Client.send` against the transport alone.
func registerChainBenchmarks() {
    let transport: any Transport = InMemoryTransport()
    let direct = callingDirectly(transport)
    let passThrough0 = sending(through: Client(transport: transport))
    let passThrough1 = sending(through: Client(transport: transport, middleware: Fixtures.passThrough(1)))
    let passThrough10 = sending(through: Client(transport: transport, middleware: Fixtures.passThrough(10)))
    let header1 = sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(1)))
    let header10 = sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(10)))

    PerRequest.register("Transport.send directly (in-memory)", direct)
    PerRequest.register("Client.send, 0 layers", passThrough0)
    PerRequest.register("Client.send, 1 pass-through layer", passThrough1)
    PerRequest.register("Client.send, 10 pass-through layers", passThrough10)
    PerRequest.register("Client.send, 1 header-setting layer", header1)
    PerRequest.register("Client.send, 10 header-setting layers", header10)

    Paired.register(
        "Paired: Client.send (0 layers) vs Transport.send",
        calls: 1_000,
        baseline: direct,
        candidate: passThrough0
    )
    Paired.register("Paired: 1 pass-through layer vs 0", calls: 1_000, baseline: passThrough0, candidate: passThrough1)
    Paired.register(
        "Paired: 10 pass-through layers vs 0, per layer",
        calls: 1_000,
        per: 10,
        baseline: passThrough0,
        candidate: passThrough10
    )
    Paired.register("Paired: 1 header-setting layer vs 0", calls: 1_000, baseline: passThrough0, candidate: header1)
    Paired.register(
        "Paired: 10 header-setting layers vs 0, per layer",
        calls: 1_000,
        per: 10,
        baseline: passThrough0,
        candidate: header10
    )
}
