import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Destinations and answers nobody had tried on `Client.download`: a dangling link, the longest file name a
/// directory takes, and a part of the resource where the whole was asked for.
@Suite("Client.download against odd destinations and partial answers", .timeLimit(.minutes(1)))
struct DownloadAttackTests {
    private let base = URL(string: "http://127.0.0.1")!
    private let payload = Data((0..<3_000).map { UInt8($0 % 251) })

    private var whole: MockTransport {
        MockTransport { MockRoute.get("/file").replies(.stream([.data(payload)], headers: ["Content-Length": "3000"])) }
    }

    @Test("a dangling symbolic link at the destination is refused before anything is sent; nothing is created")
    func danglingLink() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let link = directory.file("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "missing")
        let mock = whole
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: link)
        }
        #expect(error.code == .invalidRequest)
        #expect(mock.requests.isEmpty)
        #expect(try directory.names() == ["link"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "missing")
    }

    @Test(
        "a destination whose name is as long as a directory allows (255 bytes) is downloaded, resumable or not",
        arguments: [false, true]
    )
    func longestName(resumable: Bool) async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let name = String(repeating: "n", count: 255)
        _ = try await Client(baseURL: base, transport: whole).download(
            .get("/file"),
            to: directory.file(name),
            resumable: resumable
        )
        #expect(try Data(contentsOf: directory.file(name)) == payload)
        #expect(try directory.names() == [name])
    }

    @Test("a 206 to a request that asked for no range is a part, not the file: the download fails, nothing is written")
    func partForWhole() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    [.data(payload.prefix(1_000))],
                    status: 206,
                    headers: ["Content-Range": "bytes 0-999/3000", "Content-Length": "1000", "ETag": "\"v1\""]
                )
            )
        }
        let error = try await #require(throws: CourierError.self) {
            _ = try await Client(baseURL: base, transport: mock).download(.get("/file"), to: directory.file())
        }
        #expect(error.statusCode == 206)
        #expect(try directory.names().isEmpty)
    }

    @Test("a caller that asks for a range itself gets the part it asked for")
    func callersOwnRange() async throws {
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    [.data(payload.prefix(1_000))],
                    status: 206,
                    headers: ["Content-Range": "bytes 0-999/3000", "Content-Length": "1000"]
                )
            )
        }
        var request = Request<Data>.get("/file")
        request.headers["Range"] = "bytes=0-999"
        _ = try await Client(baseURL: base, transport: mock).download(request, to: directory.file())
        #expect(try Data(contentsOf: directory.file()) == payload.prefix(1_000))
    }
}
