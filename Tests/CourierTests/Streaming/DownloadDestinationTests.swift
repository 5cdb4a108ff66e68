import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory for one test's downloads, and what is in it.
struct DownloadDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    func file(_ name: String = "file.bin") -> URL { url.appendingPathComponent(name) }

    /// The names in the directory, sorted, hidden ones (a download's temporary file) included.
    func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }

    func remove() {
        // A test may have made the directory read-only.
        _ = chmod(url.path, 0o755)
        try? FileManager.default.removeItem(at: url)
    }
}

@Suite("Client.download's destination", .timeLimit(.minutes(1)))
struct DownloadDestinationTests {
    private let base = URL(string: "http://127.0.0.1")!
    private let payload = Data((0..<3_000).map { UInt8($0 % 251) })
    private let previous = Data("the previous file".utf8)

    private func client(_ mock: MockTransport) -> Client { Client(baseURL: base, transport: mock) }

    /// The whole payload with a strong validator, as version "v1": a resumable download keeps it.
    private var tagged: MockTransport {
        MockTransport {
            MockRoute.get("/file").replies(
                .stream([.data(payload)], headers: ["Content-Length": "3000", "ETag": "\"v1\""])
            )
        }
    }

    private var whole: MockTransport {
        MockTransport { MockRoute.get("/file").replies(.stream([.data(payload)], headers: ["Content-Length": "3000"])) }
    }

    @Test("an existing directory at the destination is refused before anything is sent, and kept with its contents")
    func directoryRefused() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file("exports")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        try previous.write(to: destination.appendingPathComponent("keep.txt"))
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: destination)
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("is a directory"), "\(error.message)")
        #expect(mock.requests.isEmpty)
        #expect(try Data(contentsOf: destination.appendingPathComponent("keep.txt")) == previous)
        #expect(try directory.names() == ["exports"])
    }

    @Test("an existing file is replaced only once the body is complete, and is the previous file until then")
    func fileReplacedOnSuccess() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        try previous.write(to: destination)
        let gate = Gate()
        let arrived = Arrivals()
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    [
                        .data(payload.prefix(1_000)), .hold(until: gate, counting: arrived),
                        .data(payload.dropFirst(1_000)),
                    ],
                    headers: ["Content-Length": "3000"]
                )
            )
        }
        let download = Task { [client = client(mock)] in try await client.download(.get("/file"), to: destination) }
        await arrived.wait(for: 1)
        #expect(try Data(contentsOf: destination) == previous)
        #expect(try directory.names().count == 2)  // the file and the temporary file beside it
        gate.open()
        _ = try await download.join()
        #expect(try Data(contentsOf: destination) == payload)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("an existing file is left as it was when the server fails mid-body")
    func fileKeptOnFailure() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        try previous.write(to: destination)
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream([.data(payload.prefix(1_000)), .drop()]))
        }
        await #expect(throws: CourierError.self) { _ = try await client(mock).download(.get("/file"), to: destination) }
        #expect(try Data(contentsOf: destination) == previous)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("an existing file is not replaced by the empty body of a 204 or 205", arguments: [204, 205])
    func noContentKeepsFile(status: Int) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        try previous.write(to: destination)
        let mock = MockTransport { MockRoute.get("/file").replies(.stream([], status: status)) }
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: destination)
        }
        #expect(error.code == .unacceptableStatus)
        #expect(error.statusCode == status)
        #expect(try Data(contentsOf: destination) == previous)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("a directory put at the destination during the download is not removed: the download fails")
    func directoryAppearingMeanwhile() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        let gate = Gate()
        let arrived = Arrivals()
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream([.data(payload), .hold(until: gate, counting: arrived)]))
        }
        let download = Task { [client = client(mock)] in try await client.download(.get("/file"), to: destination) }
        await arrived.wait(for: 1)
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        try previous.write(to: destination.appendingPathComponent("keep.txt"))
        gate.open()
        await #expect(throws: (any Error).self) { _ = try await download.join() }
        #expect(try Data(contentsOf: destination.appendingPathComponent("keep.txt")) == previous)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("a destination whose parent is a regular file fails with a clear error before anything is sent")
    func parentIsAFile() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try previous.write(to: directory.file("parent"))
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: directory.file("parent").appendingPathComponent("x"))
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains(directory.file("parent").path), "\(error.message)")
        #expect(mock.requests.isEmpty)
        #expect(try Data(contentsOf: directory.file("parent")) == previous)
        #expect(try directory.names() == ["parent"])
    }

    /// Root writes into a directory whatever its mode says, so this runs only as another user.
    @Test(
        "a destination in a directory without write permission fails before anything is sent",
        .enabled(if: getuid() != 0, "root may write into a read-only directory")
    )
    func readOnlyDirectory() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try #require(chmod(directory.url.path, 0o555) == 0)
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: directory.file())
        }
        #expect(error.code == .invalidRequest)
        #expect(mock.requests.isEmpty)
        #expect(try directory.names().isEmpty)
    }

    @Test(
        "a symbolic link at the destination is refused before anything is sent; the link and its target are kept",
        arguments: [false, true]
    )
    func symbolicLinkRefused(toDirectory: Bool) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let target = directory.file("target")
        if toDirectory {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
            try previous.write(to: target.appendingPathComponent("keep.txt"))
        } else {
            try previous.write(to: target)
        }
        let link = directory.file("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "target")
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: link)
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("symbolic link"), "\(error.message)")
        #expect(mock.requests.isEmpty)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "target")
        #expect(try Data(contentsOf: toDirectory ? target.appendingPathComponent("keep.txt") : target) == previous)
        #expect(try directory.names() == ["link", "target"])
    }

    @Test("a FIFO at the destination is refused before anything is sent")
    func fifoRefused() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try #require(mkfifo(directory.file().path, 0o600) == 0)
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await client(mock).download(.get("/file"), to: directory.file())
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("FIFO"), "\(error.message)")
        #expect(mock.requests.isEmpty)
    }

    @Test("a destination in a directory reached through a symbolic link is written there")
    func linkedParent() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.file("real"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: directory.file("alias").path, withDestinationPath: "real")
        _ = try await client(whole).download(.get("/file"), to: directory.file("alias").appendingPathComponent("f"))
        #expect(try Data(contentsOf: directory.file("real").appendingPathComponent("f")) == payload)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("real").path) == ["f"])
    }

    /// What another process could put at the destination after the download's last check and before its rename.
    enum Intruder: String, CaseIterable, CustomStringConvertible {
        case symbolicLink, directory, fifo
        var description: String { rawValue }
    }

    /// Replaces `destination` (a regular file) with `intruder`; returns the check that it is still there, unchanged.
    private func intrude(_ intruder: Intruder, at destination: URL, victim: URL) throws -> () throws -> Bool {
        try FileManager.default.removeItem(at: destination)
        switch intruder {
        case .symbolicLink:
            try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: victim)
            return {
                try FileManager.default.destinationOfSymbolicLink(atPath: destination.path) == victim.path
                    && (try Data(contentsOf: victim)) == previous
            }
        case .directory:
            try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
            try previous.write(to: destination.appendingPathComponent("keep.txt"))
            return { try Data(contentsOf: destination.appendingPathComponent("keep.txt")) == previous }
        case .fifo:
            #expect(mkfifo(destination.path, 0o600) == 0)
            return { (try? FileStatus.of(destination.path, followingLinks: false).get())?.kind == .fifo }
        }
    }

    @Test(
        "a link, directory or FIFO swapped in after the last check is neither replaced nor followed: the download fails",
        arguments: Intruder.allCases,
        [false, true]
    )
    func intruderAtTheRename(intruder: Intruder, resumable: Bool) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        let victim = directory.file("victim.txt")
        try previous.write(to: destination)
        try previous.write(to: victim)
        let unchanged = LockedState<(() throws -> Bool)?>(nil)
        let swap: @Sendable (URL) -> Void = { [self] destination in
            unchanged.withLock { $0 = try? intrude(intruder, at: destination, victim: victim) }
        }
        let error = try await #require(throws: CourierError.self) {
            try await DownloadFile.$beforePlacing.withValue(swap) {
                _ = try await client(tagged).download(.get("/file"), to: destination, resumable: resumable)
            }
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("while the body arrived"))
        let check = try #require(unchanged.withLock { $0 })
        #expect(try check())
        #expect(try Data(contentsOf: victim) == previous)
        guard resumable else {
            // Nothing of the download's is left: no temporary file.
            #expect(try directory.names() == ["file.bin", "victim.txt"])
            return
        }
        // A resumable download keeps its whole body as its partial file, with its record: once the name is a
        // file's again, the next call asks for the last byte only and finishes.
        let partial = ".file.bin.courier-partial"
        #expect(try directory.names() == [partial, partial + ".json", "file.bin", "victim.txt"])
        try FileManager.default.removeItem(at: destination)
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    [.data(payload.suffix(1))],
                    status: 206,
                    headers: ["ETag": "\"v1\"", "Content-Range": "bytes 2999-2999/3000"]
                )
            )
        }
        _ = try await client(mock).download(.get("/file"), to: destination, resumable: true)
        #expect(mock.requests.map { $0.value(forHTTPHeaderField: "Range") } == ["bytes=2999-"])
        #expect(try Data(contentsOf: destination) == payload)
        #expect(try directory.names() == ["file.bin", "victim.txt"])
    }

    @Test("a link put back after another process took the download away from the destination is kept, not removed")
    func putBackAfterTheNameWasFreed() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        let victim = directory.file("victim.txt")
        let elsewhere = directory.file("moved-by-a-watcher.bin")
        try previous.write(to: victim)
        let swap: @Sendable (URL) -> Void = { destination in
            try? FileManager.default.createSymbolicLink(at: destination, withDestinationURL: victim)
        }
        // Right after the exchange, a watcher moves the new file at the destination's name elsewhere.
        let watcher: @Sendable (String) -> Void = { destination in
            _ = rename(destination, elsewhere.path)
        }
        await #expect(throws: CourierError.self) {
            try await DownloadFile.$beforePlacing.withValue(swap) {
                try await FilePlacement.$afterExchange.withValue(watcher) {
                    _ = try await client(whole).download(.get("/file"), to: destination)
                }
            }
        }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: destination.path) == victim.path)
        #expect(try Data(contentsOf: victim) == previous)
        #expect(try directory.names() == ["file.bin", "moved-by-a-watcher.bin", "victim.txt"])
    }

    @Test("a regular file swapped in after the last check is replaced, as any regular file at the destination is")
    func regularFileAtTheRename() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let destination = directory.file()
        let write: @Sendable (URL) -> Void = { [previous] destination in try? previous.write(to: destination) }
        try await DownloadFile.$beforePlacing.withValue(write) {
            _ = try await client(whole).download(.get("/file"), to: destination)
        }
        #expect(try Data(contentsOf: destination) == payload)
        #expect(try directory.names() == ["file.bin"])
    }
}
