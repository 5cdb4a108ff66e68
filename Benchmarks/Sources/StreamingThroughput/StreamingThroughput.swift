// Streamed download throughput of Courier against the bare clients, from an in-process server on loopback, and
// the peak memory of one large download:
//
//     swift build -c release --product StreamingThroughput
//     .build/release/StreamingThroughput throughput 268435456 15     # 256 MiB a download, 15 rounds
//     .build/release/StreamingThroughput memory courierAHC 1073741824
//     .build/release/StreamingThroughput calls 1024 2000 16 9          # 2,000 streamed 1 KiB calls, 16 at once
//
// A round downloads the body once with each client of a pair in A B B A order (bare, Courier, Courier, bare)
// and records Courier's throughput over the bare client's; the medians and spreads of those ratios are
// printed. See RESULTS.md.

import AsyncHTTPClient
import BenchmarkSupport
import Courier
import Dispatch
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@main
struct StreamingThroughput {
    // A synchronous `main` that waits on a semaphore, as InstructionCounts': valgrind 3.19 crashes in
    // libdispatch's main-thread signal handling, which an `async` main enters.
    static func main() throws {
        let failure = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                try await run()
            } catch {
                failure.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    static func run() async throws {
        let arguments = CommandLine.arguments
        let server = try await StreamingServer.start()
        let clients = Clients()
        defer { clients.shutdown() }
        switch (arguments.dropFirst().first, arguments.count) {
        case ("throughput", 4...):
            // Optional pairs after the rounds, as `bare:candidate`; the usual four without.
            let pairs = namedPairs(arguments.dropFirst(4))
            try await throughput(
                server,
                clients,
                bytes: Int(arguments[2])!,
                rounds: Int(arguments[3])!,
                pairs: pairs.isEmpty ? defaultPairs : pairs
            )
        case ("calls", 6...):
            // Many small streamed calls, WIDTH at a time, as a generated OpenAPI client makes them.
            let pairs = namedPairs(arguments.dropFirst(6))
            try await calls(
                server,
                clients,
                bytes: Int(arguments[2])!,
                count: Int(arguments[3])!,
                width: Int(arguments[4])!,
                rounds: Int(arguments[5])!,
                pairs: pairs.isEmpty ? [("bareAHC", "courierAHC")] : pairs
            )
        case ("heads", 3):
            // Small buffered calls whose response has 8 typical fields: for valgrind, to count what converting a
            // response head costs (callgrind's inclusive count of `makeResponse`).
            let transport = AsyncHTTPClientTransport(client: clients.httpClient)
            let url = URL(string: "http://127.0.0.1:\(server.port)/typical-head/16")!
            for _ in 0..<Int(arguments[2])! {
                let (data, _) = try await transport.send(URLRequest(url: url))
                guard data.count == 16 else { throw DownloadFailed(detail: "\(data.count) bytes from \(url)") }
            }
        case ("memory", 4):
            let download = try clients.download(arguments[2])
            let before = peakMemory()
            try await download(server.url(bytes: Int(arguments[3])!))
            print("\(arguments[2]): peak resident before \(before >> 20) MiB, after \(peakMemory() >> 20) MiB")
        default:
            print(
                "usage: StreamingThroughput throughput BYTES ROUNDS [BARE:CANDIDATE ...] | "
                    + "calls BYTES COUNT WIDTH ROUNDS [BARE:CANDIDATE ...] | memory CLIENT BYTES | heads COUNT"
            )
            print("clients: " + Clients.names.joined(separator: " "))
        }
        try await server.shutdown()
    }

    /// The pairs named on the command line, each as `bare:candidate`.
    static func namedPairs(_ arguments: ArraySlice<String>) -> [(String, String)] {
        arguments.map { pair in
            let names = pair.split(separator: ":").map(String.init)
            return (names[0], names[1])
        }
    }

    static let defaultPairs = [
        ("bareAHC", "courierAHC"), ("bareAHC", "bareAHCData"), ("bareAHCData", "courierAHC"),
        ("bareURLSession", "courierURLSession"),
    ]

    static func throughput(
        _ server: LoopbackServer,
        _ clients: Clients,
        bytes: Int,
        rounds: Int,
        pairs: [(String, String)]
    ) async throws {
        let url = server.url(bytes: bytes)
        let clock = ContinuousClock()
        for (bare, courier) in pairs {
            let runBare = try clients.download(bare)
            let runCourier = try clients.download(courier)
            // One of each first, to open the connections and warm up.
            try await runBare(url)
            try await runCourier(url)
            let gibibytes = 2 * Double(rounds) * Double(bytes) / Double(1 << 30)
            var ratios: [Double] = []
            var bareRates: [Double] = []
            var courierRates: [Double] = []
            var bareCPU = 0.0
            var courierCPU = 0.0
            for _ in 0..<rounds {
                var cpu = processCPU()
                let a1 = try await clock.measure { try await runBare(url) }
                bareCPU += processCPU() - cpu
                cpu = processCPU()
                let b1 = try await clock.measure { try await runCourier(url) }
                let b2 = try await clock.measure { try await runCourier(url) }
                courierCPU += processCPU() - cpu
                cpu = processCPU()
                let a2 = try await clock.measure { try await runBare(url) }
                bareCPU += processCPU() - cpu
                let bareTime = seconds(a1 + a2)
                let courierTime = seconds(b1 + b2)
                ratios.append(bareTime / courierTime)
                bareRates.append(2 * Double(bytes) / bareTime / 1_048_576)
                courierRates.append(2 * Double(bytes) / courierTime / 1_048_576)
            }
            print(
                "\(courier) vs \(bare): ratio p50 \(format(median(ratios))) (min \(format(ratios.min()!)), "
                    + "max \(format(ratios.max()!))); \(bare) p50 \(Int(median(bareRates))) MiB/s, "
                    + "\(courier) p50 \(Int(median(courierRates))) MiB/s; CPU (process, server included) "
                    + "\(format(bareCPU / gibibytes)) vs \(format(courierCPU / gibibytes)) s/GiB"
            )
        }
    }

    /// `count` calls for `bytes` each, `width` at a time, per client and round (A B B A, as `throughput`): the
    /// ratio of Courier's calls per second over the bare client's, and how many connections each client opened.
    static func calls(
        _ server: LoopbackServer,
        _ clients: Clients,
        bytes: Int,
        count: Int,
        width: Int,
        rounds: Int,
        pairs: [(String, String)]
    ) async throws {
        let url = server.url(bytes: bytes)
        let clock = ContinuousClock()
        for (bare, courier) in pairs {
            let runBare = try clients.download(bare)
            let runCourier = try clients.download(courier)
            var connections = (bare: 0, courier: 0)
            func batch(_ run: @escaping @Sendable (String) async throws -> Void, isBare: Bool) async throws -> Double {
                let before = StreamingServer.connectionsAccepted
                let elapsed = try await clock.measure {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<width {
                            group.addTask { for _ in 0..<(count / width) { try await run(url) } }
                        }
                        try await group.waitForAll()
                    }
                }
                let opened = StreamingServer.connectionsAccepted - before
                if isBare { connections.bare += opened } else { connections.courier += opened }
                return seconds(elapsed)
            }
            // One batch of each first, to open the connections and warm up.
            _ = try await batch(runBare, isBare: true)
            _ = try await batch(runCourier, isBare: false)
            connections = (0, 0)
            var ratios: [Double] = []
            var courierRates: [Double] = []
            for _ in 0..<rounds {
                let a1 = try await batch(runBare, isBare: true)
                let b1 = try await batch(runCourier, isBare: false)
                let b2 = try await batch(runCourier, isBare: false)
                let a2 = try await batch(runBare, isBare: true)
                ratios.append((a1 + a2) / (b1 + b2))
                courierRates.append(2 * Double(count) / (b1 + b2))
            }
            print(
                "\(courier) vs \(bare), \(count) calls of \(bytes) bytes, \(width) at a time: ratio p50 "
                    + "\(format(median(ratios))) (min \(format(ratios.min()!)), max \(format(ratios.max()!))); "
                    + "\(courier) p50 \(Int(median(courierRates))) calls/s; connections opened over "
                    + "\(2 * rounds * count) calls each: \(bare) \(connections.bare), \(courier) \(connections.courier)"
            )
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func format(_ value: Double) -> String {
        String(format: "%.3f", value)
    }

    /// The CPU time of the process so far (user and system, all threads), in seconds.
    static func processCPU() -> Double {
        let usage = resourceUsage()
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// The peak resident memory of the process so far, in bytes (`ru_maxrss`, in KiB on Linux).
    static func peakMemory() -> Int {
        resourceUsage().ru_maxrss * 1024
    }

    static func resourceUsage() -> rusage {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return usage
    }
}

struct DownloadFailed: Error {
    let detail: String
}

/// The clients: bare AsyncHTTPClient (also making each buffer a `Data`) and Courier over the same `HTTPClient`; a bare `URLSession` with a
/// delegate that counts the bytes, and Courier's `URLSessionTransport`.
final class Clients: Sendable {
    static let names = [
        "bareAHC", "bareAHCData", "bareAHCDataShared", "courierAHC", "courierAHCBefore", "bareURLSession",
        "courierURLSession",
    ]

    let httpClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: AsyncHTTPClientTransport.defaultConfiguration
    )
    let counter = CountingDelegate()
    let session: URLSession
    let ahcCourier: Client
    let ahcCourierBefore: Client
    let sessionCourier: Client

    init() {
        session = URLSession(
            configuration: URLSessionTransport.defaultConfiguration,
            delegate: counter,
            delegateQueue: nil
        )
        ahcCourier = Client(transport: AsyncHTTPClientTransport(client: httpClient))
        ahcCourierBefore = Client(transport: CopyingStreamTransport(client: httpClient))
        // URLSession on Linux cannot pause: the reader may fall this far behind before the body fails.
        sessionCourier = Client(transport: URLSessionTransport(maximumResponseSize: 64 << 20))
    }

    func download(_ name: String) throws -> @Sendable (String) async throws -> Void {
        switch name {
        case "bareAHC":
            return { [httpClient] url in
                let response = try await httpClient.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
                var received = 0
                for try await buffer in response.body { received += buffer.readableBytes }
                try Self.check(received, url)
            }
        case "bareAHCData":
            // Bare AsyncHTTPClient making each buffer a `Data`, as a `StreamedBody` chunk is: the copy's floor.
            return { [httpClient] url in
                let response = try await httpClient.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
                var received = 0
                for try await buffer in response.body { received += Data(buffer.readableBytesView).count }
                try Self.check(received, url)
            }
        case "bareAHCDataShared":
            // Bare AsyncHTTPClient making each buffer of 16 KiB or more a `Data` that shares its storage.
            return { [httpClient] url in
                let response = try await httpClient.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
                var received = 0
                for try await buffer in response.body { received += Self.sharedData(buffer).count }
                try Self.check(received, url)
            }
        case "courierAHC":
            return { [ahcCourier] url in try await Self.stream(ahcCourier, url) }
        case "courierAHCBefore":
            return { [ahcCourierBefore] url in try await Self.stream(ahcCourierBefore, url) }
        case "bareURLSession":
            return { [session, counter] url in
                let received = try await counter.download(URLRequest(url: URL(string: url)!), on: session)
                try Self.check(received, url)
            }
        case "courierURLSession":
            return { [sessionCourier] url in try await Self.stream(sessionCourier, url) }
        default:
            throw DownloadFailed(detail: "no client named \(name)")
        }
    }

    private static func stream(_ client: Client, _ url: String) async throws {
        let (body, _) = try await client.stream(URLRequest(url: URL(string: url)!))
        var received = 0
        for try await chunk in body { received += chunk.count }
        try check(received, url)
    }

    /// The buffer's bytes as `Data` that shares its storage (the deallocator keeps the buffer) when 16 KiB or
    /// more, as `AsyncHTTPClientTransport` makes a large chunk.
    static func sharedData(_ buffer: ByteBuffer) -> Data {
        guard buffer.readableBytes >= 16 * 1024 else { return Data(buffer.readableBytesView) }
        return buffer.withUnsafeReadableBytes { bytes in
            let start = UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
            return Data(bytesNoCopy: start, count: bytes.count, deallocator: .custom { _, _ in _ = buffer })
        }
    }

    private static func check(_ received: Int, _ url: String) throws {
        guard url.hasSuffix("/\(received)") else { throw DownloadFailed(detail: "\(received) bytes from \(url)") }
    }

    func shutdown() {
        try? httpClient.syncShutdown()
        session.finishTasksAndInvalidate()
    }
}

/// A bare `URLSession` delegate, as a caller without Courier writes one to stream: it counts the bytes as they
/// arrive and resumes the caller at the end.
final class CountingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Download {
        var received = 0
        var continuation: CheckedContinuation<Int, any Error>
    }

    private let downloads = Mutex<[Int: Download]>([:])

    func download(_ request: URLRequest, on session: URLSession) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: request)
            downloads.withLock { $0[task.taskIdentifier] = Download(continuation: continuation) }
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        downloads.withLock { $0[dataTask.taskIdentifier]?.received += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let download = downloads.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            download.continuation.resume(throwing: error)
        } else {
            download.continuation.resume(returning: download.received)
        }
    }
}

/// `AsyncHTTPClientTransport.stream(_:)` as it was before its chunks shared AsyncHTTPClient's buffers (commit
/// 14e0b80), rebuilt from public API for a side-by-side run: a task reads `response.body`, copies each buffer into
/// a `Data` and writes it into the body's pipe (`StreamedBody.init(_:)` makes the same task and pipe).
struct CopyingStreamTransport: Transport {
    let client: HTTPClient

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        throw DownloadFailed(detail: "streams only")
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let response = try await client.execute(
            HTTPClientRequest(url: request.url!.absoluteString),
            deadline: .distantFuture
        )
        var fields: [String: String] = [:]
        for (name, value) in response.headers { fields[name] = fields[name].map { $0 + ", " + value } ?? value }
        let head = HTTPURLResponse(
            url: request.url!,
            statusCode: Int(response.status.code),
            httpVersion: "HTTP/1.1",
            headerFields: fields
        )!
        return (StreamedBody(response.body.map { Data($0.readableBytesView) }), head)
    }
}
