import BenchmarkSupport

/// (6) The same pass-through layers in swift-openapi-runtime's client, the nearest peer (see `OpenAPIPeer`).
func registerOpenAPIPeerBenchmarks() {
    let direct = OpenAPIPeer.callingDirectly()
    let layers0 = OpenAPIPeer.sending(layers: 0)
    let layers1 = OpenAPIPeer.sending(layers: 1)
    let layers10 = OpenAPIPeer.sending(layers: 10)

    PerRequest.register("OpenAPI: ClientTransport.send directly (in-memory)", direct)
    PerRequest.register("OpenAPI: UniversalClient.send, 0 layers", layers0)
    PerRequest.register("OpenAPI: UniversalClient.send, 1 pass-through layer", layers1)
    PerRequest.register("OpenAPI: UniversalClient.send, 10 pass-through layers", layers10)

    Paired.register(
        "Paired: OpenAPI UniversalClient (0 layers) vs ClientTransport.send",
        calls: 1_000,
        baseline: direct,
        candidate: layers0
    )
    Paired.register(
        "Paired: OpenAPI 10 pass-through layers vs 0, per layer",
        calls: 1_000,
        per: 10,
        baseline: layers0,
        candidate: layers10
    )
}
