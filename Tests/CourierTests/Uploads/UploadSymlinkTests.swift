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

/// A directory laid out as Kubernetes mounts a Secret or a ConfigMap: `key` is a link to `..data/key`, `..data`
/// is a link to the timestamped directory that holds the real file (two levels of links).
struct ProjectedVolume {
    let directory: URL
    let contents: Data

    init(key: String = "token.bin", size: Int = 40_000) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-volume-\(UUID())")
        let versioned = directory.appendingPathComponent("..2026_11_26_20_00_00.000000001")
        try FileManager.default.createDirectory(at: versioned, withIntermediateDirectories: true)
        contents = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try contents.write(to: versioned.appendingPathComponent(key))
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("..data").path,
            withDestinationPath: versioned.lastPathComponent
        )
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent(key).path,
            withDestinationPath: "..data/\(key)"
        )
    }

    func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    func link(_ name: String, to target: String) throws -> URL {
        try FileManager.default.createSymbolicLink(atPath: url(name).path, withDestinationPath: target)
        return url(name)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

@Suite("File bodies behind symbolic links", .timeLimit(.minutes(1)))
struct UploadSymlinkTests {
    @Test("a file body follows a Secret mount's two levels of links to the regular file")
    func fileBodyThroughLinks() async throws {
        let volume = try ProjectedVolume()
        defer { volume.remove() }
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        _ = try await client.send(
            Request<Data>(method: .put, target: .path("/f"), body: .file(volume.url("token.bin")))
        )
        let sent = try #require(transport.requests.first)
        #expect(try await MockRequest(sent).readBody() == volume.contents)
        #expect(uploadLength(of: sent) == Int64(volume.contents.count))
    }

    @Test("a multipart file part follows the links, and is named after the link, not its target")
    func multipartPartThroughLinks() throws {
        let volume = try ProjectedVolume()
        defer { volume.remove() }
        let form = MultipartForm([.file("key", at: volume.url("token.bin"))], boundary: "b")
        let body = try readAsInputStream(try uploadRequest(.multipart(form), method: .post))
        var expected = Data(
            "--b\r\nContent-Disposition: form-data; name=\"key\"; filename=\"token.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8
        )
        expected.append(volume.contents)
        expected.append(contentsOf: "\r\n--b--\r\n".utf8)
        #expect(body == expected)
    }

    /// What each refusal is made of, and the words its error must use.
    enum Refused: String, CaseIterable, CustomTestStringConvertible {
        case linkToDirectory, dangling, loop, fifo, linkToFIFO, characterDevice

        var testDescription: String { rawValue }

        /// The path to upload, made in `volume`.
        func make(in volume: ProjectedVolume) throws -> URL {
            switch self {
            case .linkToDirectory:
                return try volume.link("dir", to: "..data")
            case .dangling:
                return try volume.link("gone", to: "..data/missing.bin")
            case .loop:
                _ = try volume.link("a", to: "b")
                return try volume.link("b", to: "a")
            case .fifo:
                try #require(mkfifo(volume.url("pipe").path, 0o600) == 0)
                return volume.url("pipe")
            case .linkToFIFO:
                try #require(mkfifo(volume.url("pipe").path, 0o600) == 0)
                return try volume.link("to-pipe", to: "pipe")
            case .characterDevice:
                return try volume.link("null", to: "/dev/null")
            }
        }

        var words: String {
            switch self {
            case .linkToDirectory: "is a directory"
            case .dangling: "is a symbolic link to nothing"
            case .loop: "symbolic links"
            case .fifo, .linkToFIFO: "is a FIFO"
            case .characterDevice: "is a character device"
            }
        }
    }

    @Test(
        "a link to a directory, a dangling link, a loop, a FIFO or a device is refused with a clear error, nothing sent",
        arguments: Refused.allCases
    )
    func refused(_ kind: Refused) async throws {
        let volume = try ProjectedVolume()
        defer { volume.remove() }
        let url = try kind.make(in: volume)
        let transport = MockTransport.ok
        let client = Client(baseURL: exampleBaseURL, transport: transport)
        for body in [RequestBody.file(url), .multipart(MultipartForm([.file("f", at: url)]))] {
            let error = try await #require(throws: CourierError.self) {
                _ = try await client.send(Request<Data>(method: .put, target: .path("/f"), body: body))
            }
            #expect(error.code == .encodingFailed)
            #expect(error.message.contains(kind.words), "\(error.message)")
            #expect(error.message.contains(url.path), "\(error.message)")
        }
        #expect(transport.requests.isEmpty)
    }

    @Test("a file replaced by a FIFO after the request was built fails the read instead of blocking on it")
    func replacedByFIFO() throws {
        let volume = try ProjectedVolume()
        defer { volume.remove() }
        let request = try uploadRequest(.file(volume.url("token.bin")))
        try FileManager.default.removeItem(at: volume.url("token.bin"))
        try #require(mkfifo(volume.url("token.bin").path, 0o600) == 0)
        #expect(throws: (any Error).self) { _ = try readAsInputStream(request) }
    }
}
