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
/// "Bare" is what a caller without Courier writes: `URLSession.data(for:)`; AsyncHTTPClient's `execute` and
/// `body.collect(upTo:)`. Both sides send the same request with the same headers (the default stack's
/// `Authorization` is set up front for the bare side).
func registerEndToEndBenchmarks() {
    for concurrency in [1, 16] {
        let calls = concurrency == 1 ? 200 : 800
        let suffix = concurrency == 1 ? "serial" : "\(concurrency) concurrent"
        Loopback.register(
            "Loopback: Courier+default stack over URLSessionTransport vs bare URLSession, \(suffix)",
            calls: calls,
            width: concurrency,
            baseline: { fixture in
                let (data, response) = try await fixture.session.data(for: fixture.request)
                blackHole((data, response))
            },
            candidate: { fixture in blackHole(try await fixture.sessionStackCourier.send(fixture.request)) }
        )
        Loopback.register(
            "Loopback: Courier+default stack over AsyncHTTPClientTransport vs bare AsyncHTTPClient, \(suffix)",
            calls: calls * 2,
            width: concurrency,
            baseline: { fixture in blackHole(try await fixture.asyncHTTPClientGet()) },
            candidate: { fixture in blackHole(try await fixture.ahcStackCourier.send(fixture.request)) }
        )
    }
}

/// Where the difference over AsyncHTTPClient comes from: Courier with no middleware, and with the default
/// stack minus its two timeouts, each against the bare client (serial).
func registerEndToEndBreakdown() {
    for (label, client) in [
        ("no middleware", \LoopbackClients.ahcCourier),
        ("default stack without its timeouts", \LoopbackClients.ahcUntimedCourier),
    ] {
        Loopback.register(
            "Loopback breakdown: Courier, \(label), over AsyncHTTPClientTransport vs bare AsyncHTTPClient, serial",
            calls: 400,
            width: 1,
            maxDuration: .seconds(15),
            maxIterations: 30,
            baseline: { fixture in blackHole(try await fixture.asyncHTTPClientGet()) },
            candidate: { fixture in blackHole(try await fixture[keyPath: client].send(fixture.request)) }
        )
    }
}

/// Whether `URLSessionTransport` itself costs anything at 16 concurrent requests: Courier with no middleware
/// over it, against the bare session.
func registerURLSessionBreakdown() {
    Loopback.register(
        "Loopback breakdown: Courier, no middleware, over URLSessionTransport vs bare URLSession, 16 concurrent",
        calls: 800,
        width: 16,
        maxDuration: .seconds(15),
        maxIterations: 30,
        baseline: { fixture in
            let (data, response) = try await fixture.session.data(for: fixture.request)
            blackHole((data, response))
        },
        candidate: { fixture in blackHole(try await fixture.sessionCourier.send(fixture.request)) }
    )
}

extension Loopback {
    /// Registers a paired loopback benchmark: the server and clients start in its setup and stop in its
    /// teardown, and each side makes its calls `width` at a time against the running fixture.
    ///
    /// - Parameters:
    ///   - name: The benchmark's name.
    ///   - calls: Calls per timed block.
    ///   - width: How many calls are in flight at once.
    ///   - maxDuration: How long to keep iterating.
    ///   - maxIterations: The most iterations.
    ///   - baseline: One call of the bare client.
    ///   - candidate: One call through Courier.
    static func register(
        _ name: String,
        calls: Int,
        width: Int,
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
            setup: { try await Loopback.start() },
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

/// The loopback server and clients of the benchmark that runs, started in its setup.
enum Loopback {
    private static let running = Mutex<LoopbackClients?>(nil)

    static var current: LoopbackClients {
        get throws {
            guard let fixture = running.withLock({ $0 }) else { throw LoopbackServerError.notStarted }
            return fixture
        }
    }

    static func start() async throws {
        let clients = try await LoopbackClients.start()
        running.withLock { $0 = clients }
    }

    static func stop() async throws {
        guard let fixture = running.withLock({ $0.take() }) else { return }
        try await fixture.shutdown()
    }
}
