import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Uploads over real sockets", .serialized, .timeLimit(.minutes(5)))
struct UploadsEndToEndTests {
    @Test(
        "A multipart upload with a 3 MiB file part, answered 503 the first time, arrives byte for byte on the retry",
        arguments: TransportKind.allCases
    )
    func multipartRetried(kind: TransportKind) async throws {
        let file = try LargeFile(bytes: 3 * 1024 * 1024 + 17)
        defer { file.remove() }
        let form = MultipartForm(
            [
                .text("title", "Relevé de compte"),
                .file("statement", at: file.url, filename: "relevé.bin", contentType: "application/octet-stream"),
                .data("note", Data("fin".utf8), contentType: "text/plain"),
            ],
            boundary: "e2e-boundary"
        )
        var expected = Data(
            "--e2e-boundary\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nRelevé de compte\r\n".utf8
        )
        expected.append(
            contentsOf: ("--e2e-boundary\r\nContent-Disposition: form-data; name=\"statement\"; filename=\"relevé.bin\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n").utf8
        )
        expected.append(try Data(contentsOf: file.url))
        expected.append(
            contentsOf: ("\r\n--e2e-boundary\r\nContent-Disposition: form-data; name=\"note\"\r\n"
                + "Content-Type: text/plain\r\n\r\nfin\r\n--e2e-boundary--\r\n").utf8
        )
        try await EndToEnd.run(kind) { e2e in
            let retries = Locked(0)
            let policy = RetryPolicy(maximumAttempts: 2, backoff: .immediate, budget: nil) { _ in
                retries.withLock { $0 += 1 }
            }
            let client = e2e.client([.retry(policy), .validatingStatus()])
            let (echoed, response) = try await client.send(
                Request<Data>(method: .put, target: .path("/uploads/flaky/\(e2e.key)"), body: .multipart(form))
                    .urlRequest(baseURL: e2e.server.baseURL)
            )
            #expect(retries.value == 1)
            #expect(echoed == expected)
            let digestHeader = try #require(response.value(forHTTPHeaderField: "Upload-Digest"))
            let digest = try JSONDecoder().decode(UploadDigest.self, from: Data(digestHeader.utf8))
            #expect(digest.attempt == 2)
            #expect(digest.length == expected.count)
            #expect(digest.contentType == "multipart/form-data; boundary=e2e-boundary")
            switch kind {
            case .asyncHTTPClient:
                #expect(digest.contentLength == String(expected.count))
            case .urlSession:
                // FoundationNetworking cannot give a body stream a length: it sends it chunked.
                #expect(digest.transferEncoding == "chunked")
            }
        }
    }

    @Test(
        "A 100 MiB file upload arrives whole, reports its progress, and grows the client's peak memory by less than 64 MiB",
        arguments: TransportKind.allCases
    )
    func largeFile(kind: TransportKind) async throws {
        let file = try LargeFile(bytes: 100 * 1024 * 1024)
        defer { file.remove() }
        let lastReport = Locked<UploadProgress?>(nil)
        let body = RequestBody.file(file.url).onUploadProgress { progress in lastReport.withLock { $0 = progress } }
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([.validatingStatus()])
            let before = try Memory.residentBytes()
            try Memory.resetPeak()
            let digest: UploadDigest = try await client.send(.put("/uploads/digest", body: body))
            let growth = try Memory.peakBytes() - before
            print("\(kind): peak RSS growth during a 100 MiB upload: \(growth / 1024 / 1024) MiB")
            #expect(digest.length == file.size)
            #expect(digest.fnv1a == file.fnv1a)
            #expect(lastReport.value == UploadProgress(bytesSent: Int64(file.size), totalBytes: Int64(file.size)))
            #expect(growth < 64 * 1024 * 1024)
        }
    }
}

/// A file written 1 MiB at a time (never whole in this process's memory), with its FNV-1a hash.
private struct LargeFile {
    let url: URL
    let size: Int
    let fnv1a: String

    init(bytes size: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-e2e-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = directory.appendingPathComponent("upload.bin")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var hash = UploadDigest.fnv1a([UInt8]())
        var written = 0
        while written < size {
            let count = min(1024 * 1024, size - written)
            let chunk = Data((0..<count).map { UInt8(truncatingIfNeeded: ($0 + written) &* 7 &+ ($0 + written) >> 12) })
            hash = chunk.withUnsafeBytes { UploadDigest.fnv1a($0, continuing: hash) }
            try handle.write(contentsOf: chunk)
            written += count
        }
        self.size = size
        fnv1a = String(hash, radix: 16)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
    }
}

/// This process's memory, from `/proc/self` (Linux).
private enum Memory {
    /// `VmRSS`: resident now.
    static func residentBytes() throws -> Int { try field("VmRSS") }

    /// `VmHWM`: the most resident since the process started or since ``resetPeak()``.
    static func peakBytes() throws -> Int { try field("VmHWM") }

    /// Resets `VmHWM` to the current resident size (writing 5 to `/proc/self/clear_refs`).
    static func resetPeak() throws {
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(name + ":") })
        let kilobytes = try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
        return kilobytes * 1024
    }
}
