import AsyncHTTPClient
import Benchmark
import BenchmarkSupport
import Courier
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// (9) End to end on loopback: the bare transports against Courier with the default stack over them,
/// side by side in one run (blocks of requests in A B B A order), reported as throughput ratios.
///
/// "Bare" is what a caller without Courier writes: `URLSession.data(for:)` on a session configured as
/// `URLSessionTransport`'s is; AsyncHTTPClient's `execute` and `body.collect(upTo:)`. Both sides send the same
/// request with the same headers (the default stack's `Authorization` is set up front for the bare side).
func registerEndToEndBenchmarks() {
    for concurrency in [1, 16] {
        let calls = concurrency == 1 ? 200 : 800
        let suffix = Loopback.label(width: concurrency)
        Loopback.register(
            "Loopback: Courier+default stack over URLSessionTransport vs bare URLSession, \(suffix)",
            calls: calls,
            width: concurrency,
            baseline: { fixture in blackHole(try await fixture.sessionGet()) },
            candidate: { fixture in blackHole(try await fixture.courierGet(.defaultStack, over: .urlSession)) }
        )
        Loopback.register(
            "Loopback: Courier+default stack over AsyncHTTPClientTransport vs bare AsyncHTTPClient, \(suffix)",
            calls: calls * 2,
            width: concurrency,
            baseline: { fixture in blackHole(try await fixture.asyncHTTPClientGet()) },
            candidate: { fixture in blackHole(try await fixture.courierGet(.defaultStack, over: .asyncHTTPClient)) }
        )
    }
}

/// Where the difference over AsyncHTTPClient comes from: Courier with no middleware, and with the default
/// stack minus its two timeouts, each against the bare client (serial).
func registerEndToEndBreakdown() {
    for configuration in [CourierConfiguration.none, .defaultStackWithoutTimeouts] {
        Loopback.register(
            "Loopback breakdown: Courier, \(configuration.label), over AsyncHTTPClientTransport vs bare AsyncHTTPClient, serial",
            calls: 400,
            width: 1,
            maxDuration: .seconds(15),
            maxIterations: 30,
            baseline: { fixture in blackHole(try await fixture.asyncHTTPClientGet()) },
            candidate: { fixture in blackHole(try await fixture.courierGet(configuration, over: .asyncHTTPClient)) }
        )
    }
}

/// Whether `URLSessionTransport` itself costs anything at 16 concurrent requests: Courier with no middleware
/// over it, against the bare session; and what the bare session's configuration does to that baseline: a
/// session configured as `URLSessionTransport`'s (the baseline since issue 17) against one with `.default`
/// (the baseline before, with a URL cache and cookie storage).
func registerURLSessionBreakdown() {
    Loopback.register(
        "Loopback breakdown: Courier, no middleware, over URLSessionTransport vs bare URLSession, 16 concurrent",
        calls: 800,
        width: 16,
        maxDuration: .seconds(15),
        maxIterations: 30,
        baseline: { fixture in blackHole(try await fixture.sessionGet()) },
        candidate: { fixture in blackHole(try await fixture.courierGet(.none, over: .urlSession)) }
    )
    registerSessionConfigurationComparison(prefix: "Loopback breakdown", server: .inProcess)
}

/// Registers, serial and at 16 concurrent, the bare session configured as `URLSessionTransport`'s against the
/// bare session with `.default`: above 1 when the `.default` baseline was the slower one, which flattered
/// Courier's ratio over URLSession. And two pairs that split `URLSessionTransport`'s cost: a bare session that
/// receives the body through a delegate that only collects it against `data(for:)` (what receiving through a
/// delegate costs, which the transport does to refuse an oversized body while it arrives), and Courier with no
/// middleware and with the recommended stack against that delegate (what Courier adds beyond it).
///
/// - Parameters:
///   - prefix: What the names start with.
///   - server: The server.
func registerSessionConfigurationComparison(prefix: String, server: LoopbackTarget) {
    for width in [1, 16] {
        let register = PairRegistrar(
            prefix: prefix,
            width: width,
            server: server,
            calls: width == 1 ? 200 : 400,
            maxDuration: .seconds(20),
            maxIterations: 30
        )
        register(
            "bare URLSession, URLSessionTransport's configuration vs .default",
            baseline: { fixture in
                let (data, response) = try await fixture.defaultSession.data(for: fixture.request)
                blackHole((data, response))
            },
            candidate: { fixture in blackHole(try await fixture.sessionGet()) }
        )
        register(
            "bare URLSession, a collecting delegate vs data(for:)",
            baseline: { fixture in blackHole(try await fixture.sessionGet()) },
            candidate: { fixture in blackHole(try await fixture.delegateSessionGet()) }
        )
        for configuration in [CourierConfiguration.none, .recommended] {
            register(
                "Courier, \(configuration.label), over URLSessionTransport vs bare URLSession with a collecting delegate",
                baseline: { fixture in blackHole(try await fixture.delegateSessionGet()) },
                candidate: { fixture in blackHole(try await fixture.courierGet(configuration, over: .urlSession)) }
            )
        }
    }
}

/// Registers paired loopback benchmarks that share a name prefix, a width, a server and their limits; each is
/// named "prefix: name, width".
struct PairRegistrar {
    let prefix: String
    let width: Int
    let server: LoopbackTarget
    let calls: Int
    let maxDuration: Duration
    var maxIterations = 40

    func callAsFunction(
        _ name: String,
        baseline: @escaping @Sendable (LoopbackClients) async throws -> Void,
        candidate: @escaping @Sendable (LoopbackClients) async throws -> Void
    ) {
        Loopback.register(
            "\(prefix): \(name), \(Loopback.label(width: width))",
            calls: calls,
            width: width,
            server: server,
            maxDuration: maxDuration,
            maxIterations: maxIterations,
            baseline: baseline,
            candidate: candidate
        )
    }
}

extension Loopback {
    /// Registers a paired loopback benchmark: the server and clients start in its setup and stop in its
    /// teardown, and each side makes its calls `width` at a time against the running fixture.
    ///
    /// - Parameters:
    ///   - name: The benchmark's name.
    ///   - calls: Calls per timed block.
    ///   - width: How many calls are in flight at once.
    ///   - server: The server the clients call.
    ///   - maxDuration: How long to keep iterating.
    ///   - maxIterations: The most iterations.
    ///   - baseline: One call of the bare client.
    ///   - candidate: One call through Courier.
    static func register(
        _ name: String,
        calls: Int,
        width: Int,
        server: LoopbackTarget = .inProcess,
        maxDuration: Duration = .seconds(20),
        maxIterations: Int = 40,
        baseline: @escaping @Sendable (LoopbackClients) async throws -> Void,
        candidate: @escaping @Sendable (LoopbackClients) async throws -> Void
    ) {
        Paired.register(
            name,
            calls: calls,
            maxDuration: maxDuration,
            maxIterations: maxIterations,
            setup: { try await Loopback.start(server) },
            teardown: { try await Loopback.stop() },
            baseline: { calls in
                let fixture = try Loopback.current
                try await concurrently(calls, width: width) { try await baseline(fixture) }
            },
            candidate: { calls in
                let fixture = try Loopback.current
                try await concurrently(calls, width: width) { try await candidate(fixture) }
            }
        )
    }
}

/// Runs `body` `calls` times, `width` at a time (each of `width` child tasks makes its share in turn).
func concurrently(
    _ calls: Int,
    width: Int,
    _ body: @escaping @Sendable () async throws -> Void
) async throws {
    if width == 1 {
        for _ in 0..<calls { try await body() }
        return
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<width {
            let share = calls / width + (worker < calls % width ? 1 : 0)
            group.addTask {
                for _ in 0..<share { try await body() }
            }
        }
        try await group.waitForAll()
    }
}

/// The server a loopback benchmark's clients call.
enum LoopbackTarget: Sendable {
    /// A ``LoopbackServer`` started in the benchmark's setup.
    case inProcess
    /// A server of another process (nginx), at this URL.
    case external(url: String)
}

/// The loopback server and clients of the benchmark that runs, started in its setup.
enum Loopback {
    private static let running = Mutex<LoopbackClients?>(nil)

    static var current: LoopbackClients {
        get throws {
            guard let fixture = running.withLock({ $0 }) else { throw LoopbackServerError.notStarted }
            return fixture
        }
    }

    static func start(_ server: LoopbackTarget) async throws {
        let clients =
            switch server {
            case .inProcess: try await LoopbackClients.start()
            case .external(let url): LoopbackClients.connecting(to: url)
            }
        // A server of another process is checked once, so that no figure is ever one of error responses.
        if case .external = server {
            let (response, body) = try await clients.asyncHTTPClientGet()
            guard response.status == .ok, body.readableBytes > 0 else {
                try await clients.shutdown()
                throw LoopbackServerError.unexpectedResponse(
                    status: response.status.code,
                    bodyBytes: body.readableBytes
                )
            }
        }
        running.withLock { $0 = clients }
    }

    /// How benchmark names spell `width` calls at a time.
    static func label(width: Int) -> String {
        width == 1 ? "serial" : "\(width) concurrent"
    }

    static func stop() async throws {
        guard let fixture = running.withLock({ $0.take() }) else { return }
        try await fixture.shutdown()
    }
}
