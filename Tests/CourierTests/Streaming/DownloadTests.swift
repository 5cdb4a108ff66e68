import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Client.download")
struct DownloadTests {
    private let base = URL(string: "http://127.0.0.1")!
    private let payload = Data((0..<3_000).map { UInt8($0 % 251) })

    private func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-\(UUID().uuidString).bin")
    }

    /// The payload in three chunks of 1,000 bytes from `offset` on.
    private func chunks(from offset: Int) -> [MockChunk] {
        stride(from: offset, to: payload.count, by: 1_000).map { .data(payload[$0..<min($0 + 1_000, payload.count)]) }
    }

    private func leftovers(beside file: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
            .filter { $0.contains(file.lastPathComponent) && $0 != file.lastPathComponent }
    }

    @Test("writes the body to the file chunk by chunk, reporting progress, and leaves no temporary file")
    func writesFile() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream(chunks(from: 0), headers: ["Content-Length": "3000"]))
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let seen = LockedState<[DownloadProgress]>([])
        let response = try await client.download(.get("/file"), to: file) { p in seen.withLock { $0.append(p) } }
        #expect(response.statusCode == 200)
        #expect(try Data(contentsOf: file) == payload)
        // The head's report, then (at most one per 100 ms, the latest winning) up to the whole file.
        let written = seen.withLock { $0.map(\.bytesWritten) }
        #expect(written.first == 0 && written.last == 3_000 && written == written.sorted())
        #expect(seen.withLock { $0.first?.expectedBytes } == 3_000)
        #expect(seen.withLock { $0.last?.fractionCompleted } == 1)
        #expect(try leftovers(beside: file).isEmpty)
    }

    /// What a transport may report for a connection cut mid-body without saying so: AsyncHTTPClient's parser
    /// error at an early end of the stream, URLSession's unknown error on Linux.
    struct UnexplainedEnd: Error {}

    @Test(
        "after a drop it resumes with Range and If-Range, and appends the 206, whatever error the drop came as",
        .timeLimit(.minutes(1)),
        arguments: [false, true]
    )
    func resumesWithRange(unexplained: Bool) async throws {
        let ranges = LockedState<[String?]>([])
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .handler { request in
                    ranges.withLock { $0.append(request.header("Range")) }
                    guard request.header("Range") == "bytes=1000-", request.header("If-Range") == "\"v1\"" else {
                        return .stream(
                            Array(chunks(from: 0).prefix(1)) + [unexplained ? .drop(UnexplainedEnd()) : .drop()],
                            headers: ["Content-Length": "3000", "ETag": "\"v1\""]
                        )
                    }
                    return .stream(
                        chunks(from: 1_000),
                        status: 206,
                        // RFC 9110 §15.3.7: a 206 carries the ETag a 200 would; without it, it is not appended.
                        headers: ["Content-Range": "bytes 1000-2999/3000", "Content-Length": "2000", "ETag": "\"v1\""]
                    )
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await client.download(.get("/file"), to: file)
        #expect(try Data(contentsOf: file) == payload)
        #expect(ranges.withLock { $0 } == [nil, "bytes=1000-"])
    }

    @Test("a 200 to the resumed request starts the file over")
    func restartsOnFullResponse() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .handler { request in
                    request.callIndex == 0
                        ? .stream(
                            [.data(Data(repeating: 9, count: 700)), .drop()],
                            // A Date a second or more later makes the Last-Modified strong (RFC 9110 §8.8.2.2).
                            headers: [
                                "Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT",
                                "Date": "Tue, 24 Nov 2026 00:00:30 GMT",
                            ]
                        )
                        : .stream(chunks(from: 0))
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await client.download(.get("/file"), to: file)
        #expect(try Data(contentsOf: file) == payload)
        #expect(mock.requests.last?.value(forHTTPHeaderField: "If-Range") == "Tue, 24 Nov 2026 00:00:00 GMT")
    }

    @Test("without a strong validator a drop is thrown, and the destination is left as it was")
    func noValidatorNoResume() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream([.data(Data(count: 10)), .drop()], headers: ["ETag": "W/\"weak\""]))
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        try Data("previous".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let error = await #expect(throws: CourierError.self) { _ = try await client.download(.get("/file"), to: file) }
        #expect(error?.code == .transport)
        #expect(error?.underlying is URLError)
        #expect(mock.requests.count == 1)
        #expect(try Data(contentsOf: file) == Data("previous".utf8))
        #expect(try leftovers(beside: file).isEmpty)
    }

    @Test("a body that ends short of its Content-Length is not a file", .timeLimit(.minutes(1)))
    func shortBodyFails() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(Array(chunks(from: 0).prefix(2)), headers: ["Content-Length": "3000"])
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        let error = await #expect(throws: CourierError.self) {
            _ = try await client.download(.get("/file"), to: file, resumeAttempts: 0)
        }
        #expect(error?.message.contains("2000 of the 3000 bytes") == true)
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test("a body that ends short of its Content-Length is resumed like a lost connection")
    func shortBodyResumes() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .handler { request in
                    guard request.header("Range") == "bytes=2000-" else {
                        return .stream(
                            Array(chunks(from: 0).prefix(2)),
                            headers: ["Content-Length": "3000", "ETag": "\"v1\""]
                        )
                    }
                    return .stream(
                        chunks(from: 2_000),
                        status: 206,
                        headers: ["Content-Range": "bytes 2000-2999/3000", "ETag": "\"v1\""]
                    )
                }
            )
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await client.download(.get("/file"), to: file)
        #expect(try Data(contentsOf: file) == payload)
        #expect(mock.requests.count == 2)
    }

    @Test("cancelling the download removes the temporary file and ends the call", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let arrived = Arrivals()
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream([.data(Data(count: 10)), .hold(until: Gate(), counting: arrived)]))
        }
        let client = Client(baseURL: base, transport: mock)
        let file = temporaryFile()
        let task = Task { try await client.download(.get("/file"), to: file) }
        await arrived.wait(for: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.join() }
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(try leftovers(beside: file).isEmpty)
        #expect(client.lifecycle.inFlight == 0)
    }
}
