import Courier
import CourierTesting
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Uploads over real sockets", .serialized, .endToEndLimit(minutes: 5))
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
    /// A stream part's bytes: `count` chunks of 64 KiB, each the same, made as they are read.
    struct GeneratedPart: Sendable {
        static let chunk = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })
        let count: Int

        var length: Int { count * Self.chunk.count }

        /// A new sequence of the chunks, counting each sequence made in `made`.
        func chunks(_ made: Locked<Int>) -> AsyncStream<Data> {
            made.withLock { $0 += 1 }
            let left = Locked(count)
            return AsyncStream {
                left.withLock { left in
                    guard left > 0 else { return nil }
                    left -= 1
                    return Self.chunk
                }
            }
        }

        /// The chunks' FNV-1a hash, in hexadecimal.
        var fnv1a: String {
            var hash = UploadDigest.fnv1a([UInt8]())
            for _ in 0..<count { hash = Self.chunk.withUnsafeBytes { UploadDigest.fnv1a($0, continuing: hash) } }
            return String(hash, radix: 16)
        }
    }

    /// The parts a form of `title`, a file, a stream part and `note` should arrive as.
    static func expectedParts(file: (length: Int, fnv1a: String), generated: GeneratedPart) -> [MultipartDigest.Part] {
        [
            MultipartDigest.Part(
                name: "title",
                contentType: nil,
                length: "Relevé".utf8.count,
                fnv1a: String(UploadDigest.fnv1a(Array("Relevé".utf8)), radix: 16)
            ),
            MultipartDigest.Part(
                name: "archive",
                filename: "archive.bin",
                contentType: "application/octet-stream",
                length: file.length,
                fnv1a: file.fnv1a
            ),
            MultipartDigest.Part(
                name: "generated",
                filename: "généré.bin",
                contentType: "application/x-generated",
                length: generated.length,
                fnv1a: generated.fnv1a
            ),
            MultipartDigest.Part(
                name: "note",
                contentType: "text/plain",
                length: 3,
                fnv1a: String(UploadDigest.fnv1a(Array("fin".utf8)), radix: 16)
            ),
        ]
    }

    /// That form, with the file at `file` and a stream part of `generated` (with its length when `sized`),
    /// counting the sequences made for it in `made`.
    static func form(file: URL, generated: GeneratedPart, sized: Bool, made: Locked<Int>) -> MultipartForm {
        MultipartForm([
            .text("title", "Relevé"),
            .file("archive", at: file, filename: "archive.bin"),
            .stream(
                "generated",
                length: sized ? Int64(generated.length) : nil,
                filename: "généré.bin",
                contentType: "application/x-generated"
            ) { generated.chunks(made) },
            .data("note", Data("fin".utf8), contentType: "text/plain"),
        ])
    }

    @Test(
        "A form with a 100 MiB file and a 16 MiB stream part of unknown length, answered 503 first, arrives part by part on the retry, chunked; peak memory grows by less than 64 MiB",
        arguments: TransportKind.allCases
    )
    func multipartWithStreamPart(kind: TransportKind) async throws {
        let generated = GeneratedPart(count: 256)
        let file = try LargeFile(bytes: 100 * 1024 * 1024 + 3)
        defer { file.remove() }
        let made = Locked(0)
        let form = Self.form(file: file.url, generated: generated, sized: false, made: made)
        let expected = Self.expectedParts(file: (file.size, file.fnv1a), generated: generated)
        try await EndToEnd.run(kind) { e2e in
            let retries = Locked(0)
            let policy = RetryPolicy(maximumAttempts: 2, backoff: .immediate, budget: nil) { _ in
                retries.withLock { $0 += 1 }
            }
            let client = e2e.client([.retry(policy), .validatingStatus()])
            let before = try Memory.residentBytes()
            try Memory.resetPeak()
            let digest: MultipartDigest = try await client.send(
                .put("/uploads/multipart", query: ["failFirst": .init(e2e.key)], body: .multipart(form))
            )
            let growth = try Memory.peakBytes() - before
            print("\(kind): peak RSS growth during a 116 MiB multipart upload sent twice: \(growth >> 20) MiB")
            #expect(growth < 64 * 1024 * 1024)
            #expect(retries.value == 1)
            #expect(digest.attempt == 2)
            #expect(digest.parts == expected)
            // The factory made a new sequence for each send.
            #expect(made.value == 2)
            // A stream part without a length leaves the form's length unknown.
            #expect(digest.transferEncoding == "chunked")
            #expect(digest.contentLength == nil)
        }
    }

    @Test(
        "A form whose stream part has a length goes with a Content-Length over AsyncHTTPClient (chunked over URLSession)",
        arguments: TransportKind.allCases
    )
    func multipartWithSizedStreamPart(kind: TransportKind) async throws {
        let generated = GeneratedPart(count: 5)
        let file = try LargeFile(bytes: 300_001)
        defer { file.remove() }
        let form = Self.form(file: file.url, generated: generated, sized: true, made: Locked(0))
        try await EndToEnd.run(kind) { e2e in
            let digest: MultipartDigest = try await e2e.client([.validatingStatus()]).send(
                .put("/uploads/multipart", body: .multipart(form))
            )
            #expect(digest.parts == Self.expectedParts(file: (file.size, file.fnv1a), generated: generated))
            switch kind {
            case .asyncHTTPClient:
                #expect(digest.contentLength == String(digest.length))
                #expect(digest.transferEncoding == nil)
            case .urlSession:
                // FoundationNetworking cannot give a body stream a length.
                #expect(digest.transferEncoding == "chunked")
            }
        }
    }

    @Test(
        "A form with a one-shot stream part, answered 503, fails with bodyNotReplayable instead of being sent again",
        arguments: TransportKind.allCases
    )
    func oneShotPartNotResent(kind: TransportKind) async throws {
        let generated = GeneratedPart(count: 40)
        let made = Locked(0)
        let once = generated.chunks(made)
        let form = MultipartForm([.text("a", "1"), .stream("upload", once: once, filename: "once.bin")])
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client([
                .retry(RetryPolicy(maximumAttempts: 3, backoff: .immediate, budget: nil)), .validatingStatus(),
            ])
            let error = try await #require(throws: CourierError.self) {
                try await client.send(
                    Request<Data>.put(
                        "/uploads/multipart",
                        query: ["failFirst": .init(e2e.key)],
                        body: .multipart(form)
                    )
                )
            }
            #expect(error.code == .bodyNotReplayable)
            #expect(error.statusCode == 503)
            #expect(error.message.contains("\"upload\" is a one-shot stream"))
            // The one send the server had read the part whole.
            let body = try #require(error.responseBody)
            let digest = try JSONDecoder().decode(MultipartDigest.self, from: body)
            #expect(digest.attempt == 1)
            #expect(digest.parts.last?.length == generated.length)
            #expect(digest.parts.last?.fnv1a == generated.fnv1a)
            // And no second one: the next request under the key is the second attempt.
            let next: MultipartDigest = try await e2e.client().send(
                .put(
                    "/uploads/multipart",
                    query: ["failFirst": .init(e2e.key)],
                    body: .multipart(MultipartForm([.text("a", "1")]))
                )
            )
            #expect(next.attempt == 2)
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
