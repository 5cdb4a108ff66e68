import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Resumed downloads against servers and proxies that answer a range request with another version, a range that
/// does not fit, or no body at all.
@Suite("Client.download's resumption", .timeLimit(.minutes(1)))
struct DownloadResumeTests {
    private let base = URL(string: "http://127.0.0.1")!
    /// Version 1 and version 2 of the resource: 3,000 bytes each, different at every offset.
    private let v1 = Data((0..<3_000).map { UInt8($0 % 251) })
    private let v2 = Data((0..<3_000).map { UInt8(250 - $0 % 251) })
    private let previous = Data("the previous file".utf8)

    private func chunks(_ data: Data, from offset: Int) -> [MockChunk] {
        stride(from: offset, to: data.count, by: 1_000).map { .data(data[$0..<min($0 + 1_000, data.count)]) }
    }

    /// A server whose first answer is 1,000 bytes of v1 with `ETag: "v1"` and a dropped connection, whose range
    /// requests get `resumed`, and whose other requests get all of v2 with `ETag: "v2"`.
    private func server(
        firstHeaders: [String: String]? = nil,
        resumed: @escaping @Sendable () -> MockResponse
    )
        -> MockTransport
    {
        let first = firstHeaders ?? ["Content-Length": "3000", "ETag": "\"v1\""]
        return MockTransport {
            MockRoute.get("/file").replies(
                .handler { [v1, v2] request in
                    if request.callIndex == 0 {
                        return .stream([.data(v1.prefix(1_000)), .drop()], headers: first)
                    }
                    if request.header("Range") != nil { return resumed() }
                    return .stream(
                        [.data(v2.prefix(1_500)), .data(v2.dropFirst(1_500))],
                        headers: ["Content-Length": "3000", "ETag": "\"v2\""]
                    )
                }
            )
        }
    }

    private func ranges(_ mock: MockTransport) -> [String?] {
        mock.requests.map { $0.value(forHTTPHeaderField: "Range") }
    }

    /// A 206 carrying the rest of v2 (bytes 1000-2999), as a proxy that honours Range but ignores If-Range sends it.
    private func rest(of data: Data, headers: [String: String]) -> MockResponse {
        .stream(chunks(data, from: 1_000), status: 206, headers: headers)
    }

    static let mismatches: [(String, [String: String])] = [
        ("another strong ETag", ["ETag": "\"v2\"", "Content-Range": "bytes 1000-2999/3000"]),
        ("the same ETag, weak", ["ETag": "W/\"v1\"", "Content-Range": "bytes 1000-2999/3000"]),
        ("no ETag", ["Content-Range": "bytes 1000-2999/3000"]),
        ("another complete length", ["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/4000"]),
        ("an unknown complete length", ["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/*"]),
        ("another start", ["ETag": "\"v1\"", "Content-Range": "bytes 999-2998/3000"]),
        ("a complete length past Int64", ["ETag": "\"v1\"", "Content-Range": "bytes 1000-99/99999999999999999999999"]),
        ("a start past Int64", ["ETag": "\"v1\"", "Content-Range": "bytes 99999999999999999999999-2999/3000"]),
        ("no Content-Range", ["ETag": "\"v1\""]),
        ("a Content-Range in other units", ["ETag": "\"v1\"", "Content-Range": "items 1000-2999/3000"]),
    ]

    @Test(
        "a 206 that is not the rest of the same version is never appended: the download starts again from zero",
        arguments: mismatches
    )
    func mismatchedPartStartsOver(_ label: String, _ headers: [String: String]) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server { [v2] in rest(of: v2, headers: headers) }
        let response = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        #expect(try Data(contentsOf: directory.file()) == v2, "\(label)")
        #expect(ranges(mock) == [nil, "bytes=1000-", nil], "\(label)")
        try #require(mock.requests.count > 1)
        #expect(mock.requests[1].value(forHTTPHeaderField: "If-Range") == "\"v1\"")
        #expect(response.value(forHTTPHeaderField: "ETag") == "\"v2\"", "the head of the version in the file")
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("the rest of the same version (same strong ETag, start and complete length) is appended")
    func matchingPartAppends() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server { [v1] in
            rest(
                of: v1,
                headers: ["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/3000", "Content-Length": "2000"]
            )
        }
        _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        #expect(try Data(contentsOf: directory.file()) == v1)
        #expect(ranges(mock) == [nil, "bytes=1000-"])
    }

    @Test(
        "a 204 or another 2xx with no range to a resumed request fails, and never finishes as an empty file",
        arguments: [204, 201, 202, 205]
    )
    func emptyAnswerFails(status: Int) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try previous.write(to: directory.file())
        let mock = server { .stream([], status: status, headers: ["ETag": "\"v1\""]) }
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        }
        #expect(error.statusCode == status)
        #expect(try Data(contentsOf: directory.file()) == previous)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("a 416 to a resumed request (the resource is now shorter) starts the download again from zero")
    func unsatisfiableRangeStartsOver() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server { .status(416, headers: ["Content-Range": "bytes */500"]) }
        _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        #expect(try Data(contentsOf: directory.file()) == v2)
        #expect(ranges(mock) == [nil, "bytes=1000-", nil])
    }

    @Test("starting again is bounded: each resumption costs one attempt, at most two requests, then the error")
    func startingOverIsBounded() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        try previous.write(to: directory.file())
        // Every full answer drops after 1,000 bytes; every range request gets another version's 206.
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .handler { [v1, v2] request in
                    request.header("Range") == nil
                        ? .stream(
                            [.data(v1.prefix(1_000)), .drop()],
                            headers: ["Content-Length": "3000", "ETag": "\"v1\""]
                        )
                        : .stream(
                            chunks(v2, from: 1_000),
                            status: 206,
                            headers: ["ETag": "\"v2\"", "Content-Range": "bytes 1000-2999/3000"]
                        )
                }
            )
        }
        await #expect(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(
                .get("/file"),
                to: directory.file(),
                resumeAttempts: 2
            )
        }
        #expect(ranges(mock) == [nil, "bytes=1000-", nil, "bytes=1000-", nil])
        #expect(try Data(contentsOf: directory.file()) == previous)
        #expect(try directory.names() == ["file.bin"])
    }

    @Test("a Last-Modified without a Date a second later is a weak validator: the drop is thrown, not resumed")
    func weakLastModified() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server(firstHeaders: ["Last-Modified": "Tue, 24 Nov 2026 00:00:00 GMT"]) { .status(500) }
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        }
        #expect(error.code == .transport)
        #expect(mock.requests.count == 1)
        #expect(try directory.names().isEmpty)
    }

    @Test("a strong Last-Modified resumes, and a 206 with another Last-Modified starts again from zero")
    func strongLastModified() async throws {
        let lastModified = "Tue, 24 Nov 2026 00:00:00 GMT"
        let first = ["Last-Modified": lastModified, "Date": "Tue, 24 Nov 2026 00:00:05 GMT", "Content-Length": "3000"]
        for (resumedLastModified, expected) in [(lastModified, v1), ("Wed, 25 Nov 2026 00:00:00 GMT", v2)] {
            let directory = try DownloadDirectory()
            defer { directory.remove() }
            let mock = server(firstHeaders: first) { [v1] in
                rest(of: v1, headers: ["Last-Modified": resumedLastModified, "Content-Range": "bytes 1000-2999/3000"])
            }
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
            try #require(mock.requests.count > 1)
            #expect(mock.requests[1].value(forHTTPHeaderField: "If-Range") == lastModified)
            #expect(try Data(contentsOf: directory.file()) == expected)
        }
    }

    @Test("a body the transport decoded (Content-Encoding) is not resumed: its byte offsets are not the server's")
    func encodedBodyNotResumed() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server(firstHeaders: ["ETag": "\"v1\"", "Content-Encoding": "gzip", "Content-Length": "900"]) {
            .status(500)
        }
        await #expect(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        }
        #expect(mock.requests.count == 1)
    }

    @Test("a 206 that carries more bytes than its range is not written past the complete length")
    func overlongPartFails() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = server { [v1] in
            .stream(
                chunks(v1, from: 1_000) + [.data(Data(count: 10))],
                status: 206,
                headers: ["ETag": "\"v1\"", "Content-Range": "bytes 1000-2999/3000"]
            )
        }
        await #expect(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        }
        #expect(try directory.names().isEmpty)
    }

    /// Range requests are defined for `GET` alone (RFC 9110 §14.2): resuming another method means sending it again,
    /// and a `POST` that answers with a file (text to speech, an export) may be billed or acted on twice.
    @Test(
        "a download of another method than GET is never resumed or sent again: the drop is thrown",
        arguments: ["POST", "PUT", "PATCH", "DELETE"],
        [false, true]
    )
    func onlyGetResumes(method: String, keyed: Bool) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = MockTransport(
            .handler { [v1] request in
                if request.callIndex == 0 {
                    return .stream(
                        [.data(v1.prefix(1_000)), .drop()],
                        headers: ["Content-Length": "3000", "ETag": "\"v1\""]
                    )
                }
                return .stream(chunks(v1, from: 0), headers: ["Content-Length": "3000", "ETag": "\"v1\""])
            }
        )
        let request = Request<Data>(
            method: HTTPMethod(rawValue: method),
            target: .path("/speech"),
            // A key of the caller's does not make a range request of a POST defined.
            headers: keyed ? ["Idempotency-Key": "speech-1"] : [:],
            body: .data(Data("{\"text\":\"hello\"}".utf8))
        )
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(request, to: directory.file())
        }
        #expect(error.code == .transport)
        #expect(mock.requests.count == 1)
        #expect(try directory.names().isEmpty)
    }

    @Test("a resumable download of another method than GET is refused before anything is sent")
    func resumableNeedsGet() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = MockTransport(.handler { _ in .text("never") })
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(
                .post("/exports", body: .data(Data("{}".utf8))),
                to: directory.file(),
                resumable: true
            )
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("GET"))
        #expect(mock.requests.isEmpty)
        #expect(try directory.names().isEmpty)
    }
}
