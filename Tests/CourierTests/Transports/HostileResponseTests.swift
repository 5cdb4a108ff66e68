import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Response heads that a hostile or broken server sends, over every transport: each is refused the same way,
/// with ``CourierError/Code/nonHTTPResponse``, and quickly.
@Suite("Hostile response heads, over every transport", .timeLimit(.minutes(1)))
struct HostileResponseTests {
    /// A raw response: the status line, `fields` and `Content-Length: 2`, `Connection: close`, and the body `ok`.
    private static func raw(_ fields: [String], status: String = "200 OK") -> Data {
        var text = "HTTP/1.1 \(status)\r\n"
        for field in fields { text += field + "\r\n" }
        text += "Content-Length: 2\r\nConnection: close\r\n\r\nok"
        return Data(text.utf8)
    }

    /// Sends a GET to a server that answers with `response` over a transport of `kind`, through `send` and
    /// through `stream`, and returns how each ended.
    fileprivate static func exchange(
        _ response: Data,
        over kind: TransportKind
    ) async throws -> [Result<HTTPURLResponse, any Error>] {
        let server = try SocketServer { _ in .raw(response) }
        defer { server.shutdown() }
        return try await kind.withTransport { transport in
            let sent = await outcome { try await transport.send(URLRequest(url: server.url("/send"))).1 }
            let streamed = await outcome {
                let (body, response) = try await transport.stream(URLRequest(url: server.url("/stream")))
                _ = try await body.collect(upTo: 1 << 20)
                return response
            }
            return [sent, streamed]
        }
    }

    @Test(
        "a header value with a bare CR is refused with nonHTTPResponse (RFC 9110 §5.5), on send and on stream",
        arguments: TransportKind.allCases
    )
    func bareCarriageReturn(kind: TransportKind) async throws {
        let results = try await Self.exchange(Self.raw(["X-Evil: a\rInjected: b"]), over: kind)
        for result in results {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .nonHTTPResponse)
            // SwiftNIO's parser says what it expected ("LF character expected"), not which field.
            if kind == .urlSession || kind == .urlSessionCallersSession {
                #expect(error.message.contains("X-Evil"), "\(error.message)")
            }
        }
    }

    @Test(
        "a header value with another control character is refused too, as the http-types bridge refuses it",
        arguments: TransportKind.allCases
    )
    func otherControlCharacter(kind: TransportKind) async throws {
        let results = try await Self.exchange(Self.raw(["X-Odd: a\u{1}b"]), over: kind)
        for result in results {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .nonHTTPResponse)
        }
    }

    @Test(
        "interim 1xx responses (103 Early Hints, 102) before the final one are skipped, on send and on stream",
        arguments: TransportKind.allCases
    )
    func informationalResponsesSkipped(kind: TransportKind) async throws {
        let raw = Data(
            ("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 102 Processing\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").utf8
        )
        let server = try SocketServer { _ in .raw(raw) }
        defer { server.shutdown() }
        try await kind.withTransport { transport in
            let (data, sent) = try await transport.send(URLRequest(url: server.url("/send")))
            #expect(sent.statusCode == 200)
            #expect(data == Data("ok".utf8))
            let (body, streamed) = try await transport.stream(URLRequest(url: server.url("/stream")))
            #expect(streamed.statusCode == 200)
            #expect(try await body.collect(upTo: 1 << 20) == Data("ok".utf8))
        }
    }

    @Test("a value with a tab and non-ASCII bytes is accepted", arguments: TransportKind.allCases)
    func validValues(kind: TransportKind) async throws {
        let results = try await Self.exchange(Self.raw(["X-Tab: a\tb", "X-Text: grüße"]), over: kind)
        for result in results {
            let response = try result.get()
            #expect(response.value(forHTTPHeaderField: "X-Tab") == "a\tb")
        }
    }

    @Test(
        "a head with 10,000 fields (names of one length and first letter) is refused at once; 1,000 are accepted",
        arguments: TransportKind.allCases
    )
    func manyFields(kind: TransportKind) async throws {
        // `x00000` … `x09999`: the names that sent the old conversion into its cubic loop.
        let tooMany = (0..<10_000).map { "x\(String(format: "%05d", $0)): v" }
        for result in try await Self.exchange(Self.raw(tooMany), over: kind) {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .nonHTTPResponse)
            #expect(error.message.contains("more than Courier accepts (1000)"), "\(error.message)")
        }
        // With Content-Length and Connection, 1,000 fields in all.
        let atLimit = (0..<998).map { "x\(String(format: "%05d", $0)): v" }
        for result in try await Self.exchange(Self.raw(atLimit), over: kind) {
            let response = try result.get()
            #expect(response.value(forHTTPHeaderField: "x00997") == "v")
        }
    }
}

extension HostileResponseTests {
    @Test(
        "Content-Length with Transfer-Encoding: chunked is refused (RFC 9112 §6.3), as AsyncHTTPClient refuses it",
        arguments: TransportKind.allCases
    )
    func contentLengthWithChunked(kind: TransportKind) async throws {
        let response = Data(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\nConnection: close\r\n\r\n2\r\nok\r\n0\r\n\r\n"
                .utf8
        )
        for result in try await Self.exchange(response, over: kind) {
            let error = try #require(result.failure as? CourierError, "\(result)")
            #expect(error.code == .nonHTTPResponse)
        }
    }
}

extension HostileResponseTests {
    @Test(
        "a status line without a reason phrase: a normal response over AsyncHTTPClient, an error over URLSession on Linux",
        arguments: TransportKind.allCases
    )
    func statusLineWithoutReasonPhrase(kind: TransportKind) async throws {
        let response = Data("HTTP/1.1 200\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
        let results = try await Self.exchange(response, over: kind)
        #if canImport(FoundationNetworking)
        // The difference the Transports article's table states; FoundationNetworking parses the status line.
        let accepted = kind != .urlSession && kind != .urlSessionCallersSession
        #else
        let accepted = true
        #endif
        for result in results {
            if accepted {
                #expect(try result.get().statusCode == 200)
            } else {
                #expect(result.failure != nil, "\(result)")
            }
        }
    }
}
