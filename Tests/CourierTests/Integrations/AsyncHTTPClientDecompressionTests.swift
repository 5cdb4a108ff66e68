#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation
import NIOHTTPCompression
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("AsyncHTTPClientTransport decompresses responses", .timeLimit(.minutes(1)))
struct AsyncHTTPClientDecompressionTests {
    /// `{"message":"compressed compressed … "}` (20 times), 234 bytes.
    static let body =
        Data(#"{"message":""#.utf8) + Data(String(repeating: "compressed ", count: 20).utf8)
        + Data(#""}"#.utf8)
    /// ``body`` gzipped (46 bytes).
    static let gzipped = Data(base64Encoded: "H4sIAAAAAAACA6tWyk0tLk5MT1WyUkrOzy0oAvJSUxSGHVOpFgDsqI/p6gAAAA==")!
    /// ``body`` deflated in a zlib stream, as `Content-Encoding: deflate` has it (34 bytes).
    static let deflated = Data(base64Encoded: "eJyrVspNLS5OTE9VslJKzs8tKALyUlMUhh1TqRYAyrNbRA==")!
    /// `0123456789abcdef` 1,000 times (16,000 bytes) gzipped into 83 bytes: 192 times smaller.
    static let inflatesTooMuch = Data(
        base64Encoded:
            "H4sIAAAAAAACA+3HyQHAEAAAsJWUusZB2X+EDiL5JTwxvbnU1sdc3z7B3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3dr/wP3G+Im4A+AAA="
    )!

    /// The `CourierError` a call failed with, if it failed with one.
    static func courierError<Value>(in result: Result<Value, any Error>) -> CourierError? {
        guard case .failure(let error) = result else { return nil }
        return error as? CourierError
    }

    /// A server that answers every request with `compressed` and `Content-Encoding: encoding`.
    static func server(_ compressed: Data, encoding: String) throws -> SocketServer {
        try SocketServer { _ in
            .response(status: 200, headers: [.init(name: "Content-Encoding", value: encoding)], body: compressed)
        }
    }

    @Test(
        "gzip and deflate bodies arrive decompressed, and Accept-Encoding asks for them",
        arguments: ["gzip", "deflate"]
    )
    func decompresses(encoding: String) async throws {
        #expect(Self.gzipped.count == 46 && Self.body.count == 234)
        let server = try Self.server(encoding == "gzip" ? Self.gzipped : Self.deflated, encoding: encoding)
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/compressed"))) }
        try await transport.shutdown()
        let (data, response) = try result.get()
        #expect(data == Self.body)
        #expect(response.value(forHTTPHeaderField: "Content-Encoding") == encoding)
        #expect(server.requests.first?.header("Accept-Encoding") == "deflate, gzip")
    }

    @Test("a request's own Accept-Encoding is sent as it is")
    func ownAcceptEncoding() async throws {
        let server = try SocketServer { _ in .response(status: 200, body: Data("plain".utf8)) }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        var request = URLRequest(url: server.url("/plain"))
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let result = await outcome { try await transport.send(request) }
        try await transport.shutdown()
        #expect(try result.get().0 == Data("plain".utf8))
        #expect(server.requests.first?.header("Accept-Encoding") == "identity")
    }

    @Test("a body that inflates more than 100 times its compressed size fails the call")
    func decompressionRatioLimit() async throws {
        #expect(AsyncHTTPClientTransport.defaultDecompressionRatio == 100)
        let server = try Self.server(Self.inflatesTooMuch, encoding: "gzip")
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        let client = Client(transport: transport)
        let result = await outcome { try await client.send(URLRequest(url: server.url("/bomb"))) }
        try await transport.shutdown()
        let error = try #require(Self.courierError(in: result), "\(result)")
        #expect(error.code == .transport)
        #expect(error.underlying as? NIOHTTPDecompression.DecompressionError == .limit)
    }

    @Test("the decompressed bytes count against maximumResponseSize")
    func decompressedSizeLimit() async throws {
        let server = try Self.server(Self.gzipped, encoding: "gzip")
        defer { server.shutdown() }
        // The compressed body (46 bytes) fits; the decompressed one (234) does not.
        let transport = AsyncHTTPClientTransport(maximumResponseSize: 100)
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/compressed"))) }
        try await transport.shutdown()
        let error = try #require(Self.courierError(in: result), "\(result)")
        #expect(error.code == .bodyTooLarge)
    }

    @Test("a configuration of your own decompresses only if it says so")
    func ownConfiguration() async throws {
        let server = try Self.server(Self.gzipped, encoding: "gzip")
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport(configuration: HTTPClient.Configuration())
        let result = await outcome { try await transport.send(URLRequest(url: server.url("/compressed"))) }
        try await transport.shutdown()
        #expect(try result.get().0 == Self.gzipped)
        #expect(server.requests.first?.header("Accept-Encoding") == nil)
    }
}
#endif
