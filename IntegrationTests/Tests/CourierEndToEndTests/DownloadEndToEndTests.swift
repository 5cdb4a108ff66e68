import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `client.download` over both transports against the test server's `/download/:key`, which honours `Range` and
/// `If-Range` and cuts or stalls its first answers on request. Serialized: the first test measures the process's
/// peak memory, which another download beside it would blur.
@Suite("Downloads to a file over real sockets", .serialized, .endToEndLimit(minutes: 5))
struct DownloadEndToEndTests {
    /// A directory of the test's own, holding `destination` (with `existing` in it first, when given).
    struct Place {
        let directory: URL
        let destination: URL

        init(existing: Data? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            destination = directory.appendingPathComponent("resource.bin")
            if let existing { try existing.write(to: destination) }
        }

        /// The names in the directory, hidden ones included.
        var contents: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
        }

        func remove() {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Runs `body` for a test over `kind`, with a new server and a directory of its own (`existing` at the
    /// destination, when given), removed afterwards.
    static func run(
        _ kind: TransportKind,
        existing: Data? = nil,
        _ body: (EndToEnd, Place) async throws -> Void
    ) async throws {
        let place = try Place(existing: existing)
        defer { place.remove() }
        try await EndToEnd.run(kind) { e2e in try await body(e2e, place) }
    }

    /// What the old file held, before a download that must leave it alone.
    static let existing = Data("the previous version".utf8)

    /// The resource `/download/:key` serves with `query`.
    static func resource(_ e2e: EndToEnd, _ query: [String: String]) -> Request<Data> {
        .get(
            "/download/\(e2e.key)",
            query: Query(query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0, value: $1) })
        )
    }

    /// The requests the server received for the test's key.
    static func log(_ e2e: EndToEnd) async throws -> [DownloadRecord] {
        try await e2e.inspector.client.send(.get("/download/\(e2e.key)/log"))
    }

    /// `N` of a `Range: bytes=N-`.
    static func rangeStart(_ range: String?) -> Int? {
        guard let range, range.hasPrefix("bytes="), range.hasSuffix("-") else { return nil }
        return Int(range.dropFirst(6).dropLast())
    }

    /// Whether the file at `url` holds exactly the `bytes` bytes of version `version` of the server's resource,
    /// compared a megabyte at a time with the pattern the server generates.
    static func holdsResource(_ url: URL, bytes: Int, version: Int) throws -> Bool {
        // A whole number of the pattern's 251-byte periods: every block starts where the pattern starts.
        let block = 251 * 4096
        let pattern = Data((0..<block).map { TestServers.downloadByte(at: $0, version: version) })
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var offset = 0
        while let chunk = try handle.read(upToCount: block), !chunk.isEmpty {
            guard chunk == pattern.prefix(chunk.count) else { return false }
            offset += chunk.count
        }
        return offset == bytes
    }

    /// Records every progress report.
    final class ProgressLog: Sendable {
        let reports = Locked<[DownloadProgress]>([])
        /// Arrives once, at the first report of at least `threshold` bytes.
        let reached = Arrivals()
        let threshold: Int64

        init(threshold: Int64 = .max) { self.threshold = threshold }

        var handler: @Sendable (DownloadProgress) -> Void {
            { [reports, reached, threshold] progress in
                let first = reports.withLock { reports in
                    defer { reports.append(progress) }
                    return progress.bytesWritten >= threshold && !reports.contains { $0.bytesWritten >= threshold }
                }
                if first { reached.arrive() }
            }
        }
    }

    @Test(
        "256 MiB are written to the file byte for byte; over AsyncHTTPClient the peak memory grows by less than 64 MiB",
        .enabled(if: PeakMemory.isAvailable, "reads /proc/self/status"),
        .measuresPeakMemory,
        arguments: TransportKind.allCases
    )
    func largeFile(kind: TransportKind) async throws {
        let bytes = 256 << 20
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            // URLSession on Linux cannot pause a transfer: once the file falls 16 MiB behind the network (a loaded
            // machine starves the writer), the body fails and the download resumes from where the file stands, as
            // often as that takes. Its memory is the transport's read-ahead (StreamingEndToEndTests measures it);
            // the process's peak, which the other suites running beside this one share, is only printed here.
            let client = Client(baseURL: e2e.server.baseURL, transport: kind.make(maximumResponseSize: 16 << 20))
            let progress = ProgressLog()
            let baseline = PeakMemory.reset()
            let response = try await client.download(
                Self.resource(e2e, ["bytes": "\(bytes)"]),
                to: place.destination,
                resumeAttempts: kind == .urlSession ? 100 : 0,
                progress: progress.handler
            )
            let growth = PeakMemory.peak() - baseline
            if kind == .asyncHTTPClient {
                #expect(growth < 64 << 20, "the peak resident memory grew by \(growth >> 20) MiB")
            }
            #expect(response.statusCode == 200)
            let requests = try await Self.log(e2e).count
            print("\(kind): 256 MiB download: peak RSS growth \(growth >> 20) MiB, \(requests) request(s)")
            // The old file was replaced, and the temporary one moved into its place.
            #expect(place.contents == ["resource.bin"])
            #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 1))
            let last = try #require(progress.reports.value.last)
            #expect(last.bytesWritten == Int64(bytes) && last.expectedBytes == Int64(bytes))
            #expect(last.fractionCompleted == 1)
        }
    }

    @Test(
        "A connection cut mid-body is resumed with Range and If-Range, and the 206 appended: the file is whole",
        arguments: TransportKind.allCases,
        ["etag", "lastModified"]
    )
    func resumesAfterCut(kind: TransportKind, validator: String) async throws {
        let bytes = 3 << 20 + 17
        let cut = 1 << 20 + 5
        try await Self.run(kind) { e2e, place in
            let progress = ProgressLog()
            let response = try await e2e.client().download(
                Self.resource(e2e, ["bytes": "\(bytes)", "cutAfter": "\(cut)", "validator": validator]),
                to: place.destination,
                progress: progress.handler
            )
            #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 1))
            let log = try await Self.log(e2e)
            #expect(log.map(\.status) == [200, 206])
            #expect(log.first?.faulted == true)
            let sent = validator == "etag" ? "ETag" : "Last-Modified"
            let validatorValue = try #require(response.value(forHTTPHeaderField: sent))
            #expect(log.last?.ifRange == validatorValue)
            // Reports climb from the head's (0) to the whole length, with no restart from zero.
            let written = progress.reports.value.map(\.bytesWritten)
            #expect(written == written.sorted() && written.first == 0 && written.dropFirst().allSatisfy { $0 > 0 })
            // The range starts where the file stood when the connection was cut: at most at the cut (the transport
            // may lose what it had buffered when the connection fails; AsyncHTTPClient does).
            let start = try #require(Self.rangeStart(log.last?.range))
            #expect(start <= cut)
            let last = try #require(progress.reports.value.last)
            #expect(last.bytesWritten == Int64(bytes) && last.expectedBytes == Int64(bytes))
            #expect(place.contents == ["resource.bin"])
        }
    }

    @Test(
        "A resource that changed meanwhile (If-Range no longer matches) is downloaded again from byte 0",
        arguments: TransportKind.allCases
    )
    func changedResourceStartsOver(kind: TransportKind) async throws {
        let (bytes, cut) = (2 << 20, 700_001)
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            let progress = ProgressLog()
            let response = try await e2e.client().download(
                Self.resource(e2e, ["bytes": "\(bytes)", "cutAfter": "\(cut)", "changeOnFault": "1"]),
                to: place.destination,
                progress: progress.handler
            )
            // The second version, whole: not the first version's bytes with the second's appended.
            #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 2))
            let log = try await Self.log(e2e)
            #expect(log.map(\.status) == [200, 200])
            #expect(log.map(\.version) == [1, 2])
            #expect(log.last?.ifRange == "\"\(e2e.key)-v1\"")
            // Reports start with the head's (0) and end with the whole file; the restart's report from zero may be
            // replaced by a later one before the handler gets it (the latest wins).
            let written = progress.reports.value.map(\.bytesWritten)
            let start = try #require(Self.rangeStart(log.last?.range))
            #expect(start <= cut)
            #expect(written.first == 0)
            #expect(written.last == Int64(bytes))
            // The head returned is that of the version in the file (the restart's), as documented.
            #expect(response.value(forHTTPHeaderField: "ETag") == "\"\(e2e.key)-v2\"")
            #expect(place.contents == ["resource.bin"])
        }
    }

    @Test(
        "A body that stalls past the idle timeout is resumed like a lost connection",
        arguments: TransportKind.allCases
    )
    func stallResumes(kind: TransportKind) async throws {
        let bytes = 1 << 20
        let stall = 300_007
        try await Self.run(kind) { e2e, place in
            _ = try await e2e.client().download(
                Self.resource(e2e, ["bytes": "\(bytes)", "stallAfter": "\(stall)"]),
                to: place.destination,
                // Long enough that a loaded machine does not starve the resumed body past it, short of the stall
                // (which lasts until the test ends it, or 5 seconds).
                idleTimeout: .milliseconds(1500)
            )
            #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 1))
            let log = try await Self.log(e2e)
            #expect(log.first?.status == 200)
            #expect(log.dropFirst().allSatisfy { $0.status == 206 } && log.count >= 2)
            // A stall loses nothing: the whole of what was sent had arrived.
            #expect(log.dropFirst().first?.range == "bytes=\(stall)-")
            // Releases the stalled answer on the server.
            _ = try await e2e.inspector.client.send(Request<Data>.get("/hit/\(e2e.key)"))
        }
    }

    @Test(
        "Without a strong validator a cut is thrown as a transport error, and the old file is left as it was",
        arguments: TransportKind.allCases,
        ["weak", "none"]
    )
    func noValidatorThrows(kind: TransportKind, validator: String) async throws {
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            let error = try await #require(throws: CourierError.self) {
                try await e2e.client().download(
                    Self.resource(e2e, ["bytes": "1000000", "cutAfter": "400000", "validator": validator]),
                    to: place.destination
                )
            }
            #expect(error.code == .transport)
            #expect(try await Self.log(e2e).count == 1)
            #expect(try Data(contentsOf: place.destination) == Self.existing)
            #expect(place.contents == ["resource.bin"])
        }
    }

    @Test(
        "A download cut more often than resumeAttempts allows fails, leaving no file behind",
        arguments: TransportKind.allCases
    )
    func resumeAttemptsRunOut(kind: TransportKind) async throws {
        try await Self.run(kind) { e2e, place in
            let error = try await #require(throws: CourierError.self) {
                try await e2e.client().download(
                    Self.resource(e2e, ["bytes": "1000000", "cutAfter": "100000", "faults": "3"]),
                    to: place.destination,
                    resumeAttempts: 2
                )
            }
            #expect(error.code == .transport)
            // The first request and two resumptions, each cut after at most 100,000 more bytes.
            let log = try await Self.log(e2e)
            #expect(log.map(\.faulted) == [true, true, true])
            #expect(log.first?.range == nil)
            let starts = log.dropFirst().compactMap { Self.rangeStart($0.range) }
            #expect(starts.count == 2)
            #expect(zip([0] + starts, starts).allSatisfy { $1 >= $0 && $1 - $0 <= 100_000 })
            #expect(place.contents.isEmpty)
        }
    }

    @Test(
        "A 206 that starts at another byte than the one asked for is never appended: the download starts again from 0",
        arguments: TransportKind.allCases
    )
    func misplacedRangeStartsOver(kind: TransportKind) async throws {
        let bytes = 1_000_000
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            _ = try await e2e.client().download(
                Self.resource(e2e, ["bytes": "\(bytes)", "cutAfter": "250000", "misrange": "1"]),
                to: place.destination
            )
            // The whole resource, not 250,000 bytes with the rest appended one byte off.
            #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 1))
            let log = try await Self.log(e2e)
            #expect(log.map(\.status) == [200, 206, 200])
            #expect(log.last?.range == nil)
            #expect(place.contents == ["resource.bin"])
        }
    }

    @Test(
        "Cancelled mid-body, the download throws CancellationError and removes the partial file written next to the destination",
        arguments: TransportKind.allCases
    )
    func cancelled(kind: TransportKind) async throws {
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            let progress = ProgressLog(threshold: 200_000)
            let client = e2e.client()
            let download = Task {
                try await client.download(
                    Self.resource(e2e, ["bytes": "1000000", "stallAfter": "200000"]),
                    to: place.destination,
                    progress: progress.handler
                )
            }
            await progress.reached.wait(for: 1)
            // The body so far is in a hidden file beside the destination, which still holds the old version.
            let partial = try #require(
                place.contents.first { $0.hasPrefix(".resource.bin.") && $0.hasSuffix(".download") }
            )
            #expect(place.contents == [partial, "resource.bin"])
            #expect(try Data(contentsOf: place.destination) == Self.existing)
            download.cancel()
            await #expect(throws: CancellationError.self) { try await download.join() }
            #expect(place.contents == ["resource.bin"])
            #expect(try Data(contentsOf: place.destination) == Self.existing)
            _ = try await e2e.inspector.client.send(Request<Data>.get("/hit/\(e2e.key)"))
        }
    }

    @Test(
        "A resumable download killed mid-body (SIGKILL) is resumed by another process with Range from the partial file's length and If-Range: the file is byte-identical",
        arguments: TransportKind.allCases,
        [false, true]
    )
    func resumesAcrossProcesses(kind: TransportKind, changed: Bool) async throws {
        let bytes = 24 << 20 + 5
        let stall = 5 << 20 + 3
        let partial = ".resource.bin.courier-partial"
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            let request = Self.resource(e2e, ["bytes": "\(bytes)", "stallAfter": "\(stall)"])
            let url = try #require(try request.urlRequest(baseURL: e2e.server.baseURL).url)
            // Another process downloads until the server stalls after `stall` bytes, and is killed there.
            let child = try await ChildDownload.killAfterReport(
                of: Int64(stall),
                url: url,
                destination: place.destination
            )
            #expect(child.killed)
            #expect(child.reports.last == Int64(stall))
            // What it leaves: the partial file and its record, beside the destination as it was.
            #expect(place.contents == [partial, partial + ".json", "resource.bin"])
            let kept = try FileManager.default.attributesOfItem(
                atPath: place.directory.appendingPathComponent(partial).path
            )
            #expect((kept[.size] as? Int) == stall)
            #expect((kept[.posixPermissions] as? Int) == 0o600)
            #expect(try Data(contentsOf: place.destination) == Self.existing)
            // Releases the stalled answer on the server; then, for the second case, the resource changes.
            _ = try await e2e.inspector.client.send(Request<Data>.get("/hit/\(e2e.key)"))
            if changed {
                _ = try await e2e.inspector.client.send(Request<Data>.get("/download/\(e2e.key)/change"))
            }

            let progress = ProgressLog()
            let response = try await e2e.client().download(
                request,
                to: place.destination,
                resumable: true,
                progress: progress.handler
            )
            let log = try await Self.log(e2e)
            #expect(log.prefix(2).map(\.range) == [nil, "bytes=\(stall)-"])
            #expect(log.prefix(2).map(\.ifRange) == [nil, "\"\(e2e.key)-v1\""])
            // Any later request resumes the version in the file within the call (URLSession on Linux fails a body
            // that falls 10 MiB behind its reader).
            #expect(log.dropFirst(2).allSatisfy { $0.status == 206 && $0.version == (changed ? 2 : 1) })
            if changed {
                // The new version whole, from byte 0: not the old part with the new version's rest appended.
                #expect(log.prefix(2).map(\.status) == [200, 200])
                #expect(response.statusCode == 200)
                #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 2))
                #expect(progress.reports.value.first?.bytesWritten == 0)
            } else {
                #expect(log.prefix(2).map(\.status) == [200, 206])
                #expect(response.statusCode == 206)
                #expect(try Self.holdsResource(place.destination, bytes: bytes, version: 1))
                // Reported from where the partial file stood.
                #expect(progress.reports.value.first?.bytesWritten == Int64(stall))
            }
            #expect(progress.reports.value.last?.bytesWritten == Int64(bytes))
            #expect(place.contents == ["resource.bin"])
        }
    }

    @Test(
        "The download goes through the middleware: a 503 before the body is retried; a status not accepted throws",
        arguments: TransportKind.allCases
    )
    func throughTheMiddleware(kind: TransportKind) async throws {
        try await Self.run(kind, existing: Self.existing) { e2e, place in
            let client = e2e.client([.retry(RetryPolicy(maximumAttempts: 2, backoff: .immediate))])
            let error = try await #require(throws: CourierError.self) {
                try await client.download(.get("/status/404"), to: place.destination)
            }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 404)
            #expect(try Data(contentsOf: place.destination) == Self.existing)
            #expect(place.contents == ["resource.bin"])

            _ = try await client.download(.get("/flaky/\(e2e.key)"), to: place.destination)
            let flaky = try JSONDecoder().decode(FlakyResponse.self, from: Data(contentsOf: place.destination))
            #expect(flaky.attempts == 2)
            #expect(place.contents == ["resource.bin"])
        }
    }
}
