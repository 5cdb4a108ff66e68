import BenchmarkSupport

/// (6) The same pass-through layers in swift-openapi-runtime's client, the nearest peer (see `OpenAPIPeer`).
func registerOpenAPIPeerBenchmarks() {
    LayerLadder(
        peer: "OpenAPI",
        transport: "ClientTransport.send",
        client: "UniversalClient.send",
        pairedClient: "OpenAPI UniversalClient",
        direct: OpenAPIPeer.callingDirectly(),
        layers: OpenAPIPeer.sending(layers:)
    )
    .register()
}
