import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Compressed responses", .endToEndLimit(minutes: 2))
struct CompressionEndToEndTests {
    @Test(
        "gzip and deflate responses arrive decompressed over both transports, which ask for them",
        arguments: TransportKind.allCases,
        ["gzip", "deflate"]
    )
    func decompressed(kind: TransportKind, encoding: String) async throws {
        try await EndToEnd.run(kind) { e2e in
            let client = e2e.client()
            let (data, response) = try await client.send(URLRequest(url: e2e.server.url("/compressed/\(encoding)")))
            #expect(response.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == TestServers.compressedBodyText)
            let accepted = response.value(forHTTPHeaderField: "X-Accept-Encoding") ?? ""
            #expect(accepted.contains(encoding), "Accept-Encoding: \(accepted)")
        }
    }
}
