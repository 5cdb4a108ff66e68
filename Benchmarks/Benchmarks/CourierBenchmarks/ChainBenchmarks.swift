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
    let passThrough0 = LayerLadder(
        peer: nil,
        transport: "Transport.send",
        client: "Client.send",
        pairedClient: "Client.send",
        direct: callingDirectly(transport),
        layers: { sending(through: Client(transport: transport, middleware: Fixtures.passThrough($0))) }
    )
    .register()

    let header1 = sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(1)))
    let header10 = sending(through: Client(transport: transport, middleware: Fixtures.headerSetting(10)))
    PerRequest.register("Client.send, 1 header-setting layer", header1)
    PerRequest.register("Client.send, 10 header-setting layers", header10)
    Paired.register("Paired: 1 header-setting layer vs 0", calls: 1_000, baseline: passThrough0, candidate: header1)
    Paired.register(
        "Paired: 10 header-setting layers vs 0, per layer",
        calls: 1_000,
        per: 10,
        baseline: passThrough0,
        candidate: header10
    )
}
