import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `resumable: true`: a download that does not complete keeps its partial file and record, and a later call — in
/// this process or another — asks for the rest with `Range` and `If-Range`, under the rules of a resumption within a
/// call. (`IntegrationTests`' DownloadEndToEndTests kill a process mid-download and resume in another.)
@Suite("Client.download, resumable across calls", .timeLimit(.minutes(1)))
struct DownloadResumableTests {
    private let base = URL(string: "http://127.0.0.1")!
    /// Version 1 and version 2 of the resource: 3,000 bytes each, different at every offset.
    private static let v1 = Data((0..<3_000).map { UInt8($0 % 251) })
    private static let v2 = Data((0..<3_000).map { UInt8(250 - $0 % 251) })
    private static let partialName = ".file.bin.courier-partial"
    private static let recordName = ".file.bin.courier-partial.json"

    /// A resource at `/file` whose version is `version` (`ETag: "v1"` or `"v2"`), which honours `Range` when
    /// `If-Range` matches, and whose first answer, when `interruption` is given, is its first 1,000 bytes followed
    /// by `interruption`'s steps.
    final class Server: Sendable {
        let version = Locked(1)
        let mock: MockTransport

        init(interruption: [MockChunk]? = nil, validator: String = "etag") {
            let version = self.version
            mock = MockTransport {
                MockRoute.get("/file").replies(
                    .handler { request in
                        let current = version.value
                        let data = current == 1 ? DownloadResumableTests.v1 : DownloadResumableTests.v2
                        let tag = validator == "etag" ? "\"v\(current)\"" : "W/\"v\(current)\""
                        let headers = ["Content-Length": "3000", "ETag": tag]
                        if request.callIndex == 0, let interruption {
                            return .stream([.data(data.prefix(1_000))] + interruption, headers: headers)
                        }
                        if let range = request.header("Range"), request.header("If-Range") == tag,
                            let start = Int(range.dropFirst(6).dropLast()), start < 3_000
                        {
                            return .stream(
                                [.data(data.dropFirst(start))],
                                status: 206,
                                headers: ["Content-Range": "bytes \(start)-2999/3000", "ETag": tag]
                            )
                        }
                        return .stream([.data(data.prefix(1_500)), .data(data.dropFirst(1_500))], headers: headers)
                    }
                )
            }
        }

        var ranges: [String?] { mock.requests.map { $0.value(forHTTPHeaderField: "Range") } }
        var ifRanges: [String?] { mock.requests.map { $0.value(forHTTPHeaderField: "If-Range") } }
    }

    enum Interruption: String, CaseIterable, Sendable {
        case cancelled, failed
    }

    /// Runs a first resumable download that `interruption` stops after 1,000 bytes.
    private func interruptedDownload(
        _ interruption: Interruption,
        to destination: URL,
        validator: String = "etag"
    ) async throws -> Server {
        let gate = Gate()
        let held = Arrivals()
        let server = Server(
            interruption: interruption == .cancelled ? [.hold(until: gate, counting: held)] : [.drop()],
            validator: validator
        )
        let client = Client(baseURL: base, transport: server.mock)
        let first = Task {
            try await client.download(.get("/file"), to: destination, resumable: true, resumeAttempts: 0)
        }
        if interruption == .cancelled {
            await held.wait(for: 1)
            first.cancel()
        }
        await #expect(throws: (any Error).self) { try await first.join() }
        return server
    }

    private func permissions(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test(
        "an interrupted resumable download keeps its partial file and record (0600); the next call asks for the rest",
        arguments: Interruption.allCases
    )
    func resumesInTheNextCall(_ interruption: Interruption) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let server = try await interruptedDownload(interruption, to: directory.file())
        #expect(try directory.names() == [Self.partialName, Self.recordName])
        #expect(try Data(contentsOf: directory.file(Self.partialName)) == Self.v1.prefix(1_000))
        #expect(try permissions(directory.file(Self.partialName)) == 0o600)
        #expect(try permissions(directory.file(Self.recordName)) == 0o600)
        // The record holds no URL (which may carry a key), only a digest.
        let record = try String(decoding: Data(contentsOf: directory.file(Self.recordName)), as: UTF8.self)
        #expect(!record.contains("127.0.0.1") && !record.contains("/file"))

        let progress = Locked<[Int64]>([])
        let response = try await Client(baseURL: base, transport: server.mock).download(
            .get("/file"),
            to: directory.file(),
            resumable: true,
            progressInterval: .zero
        ) { report in progress.withLock { $0.append(report.bytesWritten) } }
        #expect(response.statusCode == 206)
        #expect(try Data(contentsOf: directory.file()) == Self.v1)
        #expect(server.ranges == [nil, "bytes=1000-"])
        #expect(server.ifRanges == [nil, "\"v1\""])
        // Reported from where the partial file stood, never from 0.
        #expect(progress.value.first == 1_000 && progress.value.last == 3_000)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("when the resource changed in between, the 200 starts the file over: the new version whole, no splice")
    func changedVersionStartsOver() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let server = try await interruptedDownload(.failed, to: directory.file())
        server.version.withLock { $0 = 2 }
        let response = try await Client(baseURL: base, transport: server.mock).download(
            .get("/file"),
            to: directory.file(),
            resumable: true
        )
        #expect(response.statusCode == 200)
        #expect(try Data(contentsOf: directory.file()) == Self.v2)
        #expect(server.ranges == [nil, "bytes=1000-"])
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("a 206 of another version (a proxy that ignores If-Range) is not appended: the file starts over from 0")
    func foreignPartStartsOver() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        _ = try await interruptedDownload(.failed, to: directory.file())
        let proxy = MockTransport {
            MockRoute.get("/file").replies(
                .handler { request in
                    request.header("Range") == nil
                        ? .stream([.data(Self.v2)], headers: ["Content-Length": "3000", "ETag": "\"v2\""])
                        : .stream(
                            [.data(Self.v2.dropFirst(1_000))],
                            status: 206,
                            headers: ["Content-Range": "bytes 1000-2999/3000", "ETag": "\"v2\""]
                        )
                }
            )
        }
        _ = try await Client(baseURL: base, transport: proxy).download(
            .get("/file"),
            to: directory.file(),
            resumable: true
        )
        #expect(try Data(contentsOf: directory.file()) == Self.v2)
        #expect(proxy.requests.map { $0.value(forHTTPHeaderField: "Range") } == ["bytes=1000-", nil])
        #expect(try directory.names() == ["file.bin"])
    }

    @Test(
        "a resumable download with a Range or If-Range of its own is refused before anything is sent: the partial file of the whole resource stays",
        arguments: ["Range", "If-Range"]
    )
    func ownRangeIsRefused(header: String) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let server = try await interruptedDownload(.failed, to: directory.file())
        var request = Request<Data>.get("/file")
        request.headers[header] = header == "Range" ? "bytes=0-99" : "\"v1\""
        let error = try await #require(throws: CourierError.self) {
            try await Client(baseURL: base, transport: server.mock).download(
                request,
                to: directory.file(),
                resumable: true
            )
        }
        #expect(error.code == .invalidRequest)
        #expect(server.mock.requests.count == 1)
        #expect(try directory.names() == [Self.partialName, Self.recordName])
        // Not resumable, the same request is sent as it is, its Range honoured.
        let ranged = MockTransport { MockRoute.get("/file").replies(.status(200, body: "part")) }
        _ = try await Client(baseURL: base, transport: ranged).download(request, to: directory.file("other.bin"))
        #expect(ranged.requests.first?.value(forHTTPHeaderField: header) == request.headers[header])
    }

    @Test("a failure of the resumed request keeps the partial file for the call after")
    func failedResumptionKeepsThePart() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let server = try await interruptedDownload(.failed, to: directory.file())
        let down = MockTransport { MockRoute.get("/file").replies(.status(503)) }
        await #expect(throws: CourierError.self) {
            try await Client(baseURL: base, transport: down).download(
                .get("/file"),
                to: directory.file(),
                resumable: true
            )
        }
        #expect(try directory.names() == [Self.partialName, Self.recordName])
        _ = try await Client(baseURL: base, transport: server.mock).download(
            .get("/file"),
            to: directory.file(),
            resumable: true
        )
        #expect(try Data(contentsOf: directory.file()) == Self.v1)
        #expect(server.ranges == [nil, "bytes=1000-"])
    }

    @Test("a version without a strong validator cannot be resumed: its partial file is removed")
    func noValidatorKeepsNothing() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        _ = try await interruptedDownload(.cancelled, to: directory.file(), validator: "weak")
        #expect(try directory.names().isEmpty)
    }

    @Test("a partial file as long as the version asks for its last byte again, and is moved into place")
    func completePartialFile() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let server = Server()
        try Self.v1.write(to: directory.file(Self.partialName))
        try record(validator: .entityTag("\"v1\""), length: 3_000).write(to: directory.file(Self.recordName))
        _ = try await Client(baseURL: base, transport: server.mock).download(
            .get("/file"),
            to: directory.file(),
            resumable: true
        )
        #expect(server.ranges == ["bytes=2999-"])
        #expect(try Data(contentsOf: directory.file()) == Self.v1)
        #expect(try directory.names() == ["file.bin"])
    }

    /// A record for `GET http://127.0.0.1/file`.
    private func record(validator: DownloadState.Validator, length: Int64?) -> Data {
        DownloadResumeRecord(
            request: DownloadResumeRecord.digest(method: "GET", url: URL(string: "http://127.0.0.1/file")!),
            validator: validator,
            completeLength: length
        ).encoded
    }

    /// Records that must be ignored, and one (`nil`) that must be used, so that the test can tell. `%R` stands for
    /// the request's digest.
    static var records: [(String, Data?)] {
        func record(_ changes: [String: Any]) -> Data {
            var fields: [String: Any] = [
                "format": 1, "request": "%R", "validatorKind": "etag", "validator": "\"v1\"", "completeLength": 3000,
            ]
            fields.merge(changes) { $1 }
            return (try? JSONSerialization.data(withJSONObject: fields)) ?? Data()
        }
        return [
            ("a well-formed record", nil),
            ("garbage", Data([0xFF, 0x00, 0x7B, 0x22])),
            ("an empty file", Data()),
            ("another request", record(["request": "0123456789abcdef"])),
            ("another format", record(["format": 2])),
            ("a negative length", record(["completeLength": -5])),
            ("a length past Int64", record(["completeLength": 1e30])),
            ("a length that is text", record(["completeLength": "3000"])),
            ("a weak validator", record(["validator": "W/\"v1\""])),
            ("an unknown validator kind", record(["validatorKind": "hash"])),
            ("a record of 1 MiB", Data(repeating: 0x20, count: 1 << 20)),
        ]
    }

    @Test("a corrupted or foreign record is ignored: the download starts from 0, never traps", arguments: records)
    func corruptedRecordIsIgnored(_ label: String, _ content: Data?) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let digest = DownloadResumeRecord.digest(method: "GET", url: URL(string: "http://127.0.0.1/file")!)
        let server = Server()
        // A part of another file: were it appended to, the file would be corrupted.
        try Data(repeating: 0xEE, count: 1_000).write(to: directory.file(Self.partialName))
        // The well-formed record names a version the server no longer has: used, its If-Range brings the whole.
        let recordData =
            content.map { Data(String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "%R", with: digest).utf8) }
            ?? record(validator: .entityTag("\"v0\""), length: 3_000)
        try recordData.write(to: directory.file(Self.recordName))
        _ = try await Client(baseURL: base, transport: server.mock).download(
            .get("/file"),
            to: directory.file(),
            resumable: true
        )
        #expect(server.ranges == [content == nil ? "bytes=1000-" : nil], "\(label)")
        #expect(try Data(contentsOf: directory.file()) == Self.v1)
        #expect(try directory.names() == ["file.bin"])
    }

    enum Squatter: String, CaseIterable, Sendable {
        case linkAtPartial, linkAtRecord, directoryAtPartial, fifoAtPartial
    }

    @Test(
        "a link, directory or FIFO at the partial file's names is refused before anything is sent, and left alone",
        arguments: Squatter.allCases
    )
    func squattersAreRefused(_ squatter: Squatter) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let victim = directory.file("victim")
        try Data("someone else's".utf8).write(to: victim)
        let name: String
        switch squatter {
        case .linkAtPartial, .linkAtRecord:
            name = squatter == .linkAtPartial ? Self.partialName : Self.recordName
            try FileManager.default.createSymbolicLink(at: directory.file(name), withDestinationURL: victim)
        case .directoryAtPartial:
            name = Self.partialName
            try FileManager.default.createDirectory(at: directory.file(name), withIntermediateDirectories: false)
        case .fifoAtPartial:
            name = Self.partialName
            #expect(mkfifo(directory.file(name).path, 0o600) == 0)
        }
        let server = Server()
        let error = await #expect(throws: CourierError.self) {
            try await Client(baseURL: base, transport: server.mock).download(
                .get("/file"),
                to: directory.file(),
                resumable: true
            )
        }
        #expect(error?.code == .invalidRequest)
        #expect(server.mock.requests.isEmpty)
        #expect(try directory.names() == [name, "victim"].sorted())
        #expect(try Data(contentsOf: victim) == Data("someone else's".utf8))
    }

    @Test("a second resumable download to the same destination while one is under way is refused")
    func oneDownloadPerPartialFile() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let gate = Gate()
        let held = Arrivals()
        let server = Server(interruption: [.hold(until: gate, counting: held), .data(Self.v1.dropFirst(1_000))])
        let client = Client(baseURL: base, transport: server.mock)
        let first = Task { try await client.download(.get("/file"), to: directory.file(), resumable: true) }
        await held.wait(for: 1)
        let error = await #expect(throws: CourierError.self) {
            try await client.download(.get("/file"), to: directory.file(), resumable: true)
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("another download") == true)
        gate.open()
        _ = try await first.join()
        #expect(try Data(contentsOf: directory.file()) == Self.v1)
        #expect(server.mock.requests.count == 1)
        #expect(try directory.names() == ["file.bin"])
    }
}
