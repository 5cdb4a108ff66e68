import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Upload progress", .timeLimit(.minutes(1)))
struct UploadProgressTests {
    /// A file body of `size` bytes whose progress reports are collected, and the request that sends it.
    private struct Reporting {
        let file: TemporaryFile
        let request: URLRequest
        let reports = Locked<[UploadProgress]>([])

        init(size: Int) throws {
            file = try TemporaryFile(size: size)
            let reports = reports
            request = try uploadRequest(
                .file(file.url).onUploadProgress { progress in reports.withLock { $0.append(progress) } }
            )
        }

        var sent: [Int64] { reports.value.map(\.bytesSent) }
    }

    @Test("progress counts the bytes the transport reads, up to the total, after every chunk")
    func reportsAsRead() async throws {
        let upload = try Reporting(size: 100_000)
        defer { upload.file.remove() }
        #expect(upload.reports.value.isEmpty)
        _ = try readAsInputStream(upload.request, maxLength: 30_000)
        #expect(upload.sent == [30_000, 60_000, 90_000, 100_000])
        #expect(upload.reports.value.allSatisfy { $0.totalBytes == 100_000 })
        #expect(upload.reports.value.last?.fractionCompleted == 1)
    }

    @Test("progress of the asynchronous read (AsyncHTTPClient's) ends at the total")
    func reportsAsyncReads() async throws {
        let upload = try Reporting(size: 300_000)
        defer { upload.file.remove() }
        _ = try await MockRequest(upload.request).readBody()
        #expect(upload.sent == [131_072, 262_144, 300_000])
    }

    @Test("a stream without a length reports no total and no fraction")
    func unknownTotal() async throws {
        let factory = ChunkFactory([Data("ab".utf8), Data("cde".utf8)])
        let reports = Locked<[UploadProgress]>([])
        let body = RequestBody.stream { factory.make() }.onUploadProgress { progress in
            reports.withLock { $0.append(progress) }
        }
        _ = try await MockRequest(try uploadRequest(body)).readBody()
        #expect(
            reports.value == [
                UploadProgress(bytesSent: 2, totalBytes: nil), UploadProgress(bytesSent: 5, totalBytes: nil),
            ]
        )
        #expect(reports.value.allSatisfy { $0.fractionCompleted == nil })
    }

    @Test("a body of bytes with a progress handler is sent as a stream so its reads are counted")
    func dataBodyWithProgress() async throws {
        let reports = Locked<[UploadProgress]>([])
        let request = try uploadRequest(
            .json(["a": 1]).onUploadProgress { progress in reports.withLock { $0.append(progress) } }
        )
        #expect(request.httpBody == nil)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(try readAsInputStream(request) == Data("{\"a\":1}".utf8))
        #expect(reports.value == [UploadProgress(bytesSent: 7, totalBytes: 7)])
    }

    @Test("a retry reports from zero again")
    func restartsOnRetry() async throws {
        let file = try TemporaryFile(size: 50_000)
        defer { file.remove() }
        let reports = Locked<[Int64]>([])
        let transport = MockTransport(
            .handler { request in
                _ = try await request.readBody()
                return request.callIndex == 0 ? .status(503) : .ok
            }
        )
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.retry(RetryPolicy(maximumAttempts: 2, backoff: .immediate))]
        )
        let body = RequestBody.file(file.url).onUploadProgress { progress in
            reports.withLock { $0.append(progress.bytesSent) }
        }
        _ = try await client.send(Request<Data>(method: .put, target: .path("/upload"), body: body))
        #expect(reports.value == [50_000, 50_000])
    }

    @Test(
        "fractionCompleted is sent / total, and 1 for an empty body",
        arguments: [
            (UploadProgress(bytesSent: 25, totalBytes: 100), 0.25 as Double?),
            (UploadProgress(bytesSent: 0, totalBytes: 0), 1),
            (UploadProgress(bytesSent: 3, totalBytes: nil), nil),
        ]
    )
    func fraction(_ progress: UploadProgress, _ expected: Double?) {
        #expect(progress.fractionCompleted == expected)
    }
}
