import BenchmarkSupport

/// The benchmarks of one client at 0, 1 and 10 pass-through layers against its transport alone, registered
/// alike for Courier and for its OpenAPI peer, so that the two sets of figures compare one to one.
struct LayerLadder {
    /// The peer's name (`OpenAPI`), which starts its benchmarks' names; `nil` for Courier.
    let peer: String?
    /// The transport's send, as the names spell it (`Transport.send`).
    let transport: String
    /// The client's send, as the per-request names spell it (`Client.send`).
    let client: String
    /// The client, as the name of the paired benchmark against the transport spells it.
    let pairedClient: String
    /// Makes calls straight to the transport.
    let direct: Calls
    /// Makes calls through the client with the given number of pass-through layers.
    let layers: (Int) -> Calls

    /// Registers the per-request benchmarks and the paired ones (0 layers against the transport, 1 and 10
    /// layers against 0); returns the calls through 0 layers, for further comparisons.
    @discardableResult
    func register() -> Calls {
        let layers0 = layers(0)
        let layers1 = layers(1)
        let layers10 = layers(10)
        let label = peer.map { "\($0): " } ?? ""
        PerRequest.register("\(label)\(transport) directly (in-memory)", direct)
        PerRequest.register("\(label)\(client), 0 layers", layers0)
        PerRequest.register("\(label)\(client), 1 pass-through layer", layers1)
        PerRequest.register("\(label)\(client), 10 pass-through layers", layers10)

        let paired = peer.map { "Paired: \($0) " } ?? "Paired: "
        Paired.register(
            "Paired: \(pairedClient) (0 layers) vs \(transport)",
            calls: 1_000,
            baseline: direct,
            candidate: layers0
        )
        Paired.register("\(paired)1 pass-through layer vs 0", calls: 1_000, baseline: layers0, candidate: layers1)
        Paired.register(
            "\(paired)10 pass-through layers vs 0, per layer",
            calls: 1_000,
            per: 10,
            baseline: layers0,
            candidate: layers10
        )
        return layers0
    }
}
