import Benchmark
import BenchmarkSupport
import Courier
import Foundation

/// (10) End to end against nginx on 127.0.0.1 (issue 17): a server we did not write, answering `GET /items` with
/// a 130-byte JSON body and 13 header fields, started by `Benchmarks/Scripts/nginx.sh`, whose URL is in
/// `COURIER_NGINX_URL`. Every pair runs in A B B A blocks (see `Paired`), serial and at 16 concurrent, and its
/// ratio is against the bare client of the same transport:
/// - over AsyncHTTPClient: Courier with no middleware, the recommended stack, the stack without its timeouts,
///   and each of its layers alone; swift-openapi-runtime over swift-openapi-async-http-client without and with
///   an authentication middleware; and the recommended stack against the latter directly;
/// - over URLSession (the bare session configured as `URLSessionTransport`'s): Courier with no middleware and
///   with the recommended stack; swift-openapi-runtime over swift-openapi-urlsession without and with an
///   authentication middleware; the recommended stack against the latter; and the bare session against one
///   with `.default`, the baseline before issue 17.
///
/// The names start with "Loopback nginx:", so that `--skip "Loopback.*"` leaves them out and
/// `--filter "Loopback nginx.*"` runs only them. Without `COURIER_NGINX_URL` one placeholder is registered in
/// their stead, whose name and setup say how to run them.
func registerNginxBenchmarks() {
    guard let url = Nginx.url else {
        Nginx.registerPlaceholder()
        return
    }
    let server = LoopbackTarget.external(url: url)
    for width in [1, 16] {
        for transport in [LoopbackTransport.asyncHTTPClient, .urlSession] {
            let names = Nginx.names(transport)
            let bare: @Sendable (LoopbackClients) async throws -> Void =
                switch transport {
                case .asyncHTTPClient: { blackHole(try await $0.asyncHTTPClientGet()) }
                case .urlSession: { blackHole(try await $0.sessionGet()) }
                }
            let register = PairRegistrar(
                prefix: "Loopback nginx",
                width: width,
                server: server,
                calls: Nginx.calls(transport, width: width),
                maxDuration: .seconds(transport == .urlSession ? 30 : 20)
            )
            for configuration in Nginx.configurations(transport) {
                register(
                    "Courier, \(configuration.label), over \(names.courier) vs bare \(names.bare)",
                    baseline: bare,
                    candidate: { blackHole(try await $0.courierGet(configuration, over: transport)) }
                )
            }
            for authenticating in [false, true] {
                register(
                    "OpenAPI runtime, \(Nginx.label(authenticating)), over \(names.openAPI) vs bare \(names.bare)",
                    baseline: bare,
                    candidate: { blackHole(try await $0.openAPI.get(over: transport, authenticating: authenticating)) }
                )
            }
            register(
                "Courier, recommended stack, over \(names.courier) vs OpenAPI runtime with auth over \(names.openAPI)",
                baseline: { blackHole(try await $0.openAPI.get(over: transport, authenticating: true)) },
                candidate: { blackHole(try await $0.courierGet(.recommended, over: transport)) }
            )
        }
    }
    registerSessionConfigurationComparison(prefix: "Loopback nginx", server: server)
    for width in [1, 16] {
        let register = PairRegistrar(
            prefix: "Loopback nginx",
            width: width,
            server: server,
            calls: Nginx.calls(.asyncHTTPClient, width: width),
            maxDuration: .seconds(20)
        )
        for pinned in [false, true] {
            register(
                "bare AsyncHTTPClient, EventLoopFuture API \(pinned ? "pinned" : "indifferent") vs async API",
                baseline: { blackHole(try await $0.asyncHTTPClientGet()) },
                candidate: { blackHole(try await $0.asyncHTTPClientFutureGet(pinned: pinned)) }
            )
        }
    }
}

/// Where the nginx benchmarks find their server.
enum Nginx {
    /// The variable `Benchmarks/Scripts/nginx.sh start`'s output goes into.
    static let variable = "COURIER_NGINX_URL"

    /// The URL nginx serves the benchmarks' resource at, or `nil` when the variable is unset or empty.
    static var url: String? {
        guard let url = ProcessInfo.processInfo.environment[variable], !url.isEmpty else { return nil }
        return url
    }

    /// How the names spell the clients over `transport`.
    static func names(_ transport: LoopbackTransport) -> (courier: String, bare: String, openAPI: String) {
        switch transport {
        case .asyncHTTPClient: ("AsyncHTTPClientTransport", "AsyncHTTPClient", "its AsyncHTTPClient transport")
        case .urlSession: ("URLSessionTransport", "URLSession", "its URLSession transport")
        }
    }

    /// Courier's configurations measured over `transport`: each layer of the recommended stack alone over
    /// AsyncHTTPClient, only the stack over URLSession.
    static func configurations(_ transport: LoopbackTransport) -> [CourierConfiguration] {
        switch transport {
        case .asyncHTTPClient:
            [
                .none, .recommended, .recommendedWithChildTasks, .recommendedWithoutTimeouts, .counting, .timeout,
                .retry, .authentication, .statusValidation,
            ]
        case .urlSession: [.none, .recommended]
        }
    }

    /// Calls per timed block: 200 serial; at 16 concurrent 800 over AsyncHTTPClient and 400 over URLSession,
    /// whose calls take several times longer there, so that a run still has a dozen iterations or more.
    static func calls(_ transport: LoopbackTransport, width: Int) -> Int {
        if width == 1 { return 200 }
        return transport == .urlSession ? 400 : 800
    }

    /// How the names spell the OpenAPI client's middleware.
    static func label(_ authenticating: Bool) -> String {
        authenticating ? "auth middleware" : "no middleware"
    }

    /// Registers the benchmark that stands for the nginx ones when there is no server: it does nothing, and
    /// its setup says, on standard error, how to run them.
    static func registerPlaceholder() {
        let message = "\(variable) is not set; start nginx with Benchmarks/Scripts/nginx.sh start"
        Benchmark(
            "Loopback nginx: skipped, \(message)",
            configuration: .init(
                metrics: [.wallClock],
                warmupIterations: 0,
                maxIterations: 1,
                setup: {
                    FileHandle.standardError.write(
                        Data(
                            "Loopback nginx benchmarks skipped: \(message) and export its output as \(variable)\n".utf8
                        )
                    )
                }
            )
        ) { _ in }
    }
}
