import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport error says what happened, in words and with the `URLError` code's name and number, and still
/// shows no secret.
@Suite("Transport failures say what happened", .timeLimit(.minutes(1)))
struct TransportFailureTests {
    /// Nothing listens on port 1 of the loopback address, so a connection is refused at once.
    private static let refused = URL(string: "http://127.0.0.1:1/x?access_token=refused-5ecret-1")!

    @Test(
        "a refused connection names the endpoint, the URLError code and its number",
        arguments: TransportKind.allCases
    )
    func refusedConnection(kind: TransportKind) async throws {
        let error = try await #require(throws: CourierError.self) {
            try await kind.withTransport { transport in
                try await Client(transport: transport).send(URLRequest(url: Self.refused))
            }
        }
        #expect(error.code == .transport)
        #expect(error.message.hasPrefix("cannot connect to 127.0.0.1:1"), "\(error.message)")
        let description = error.description
        #expect(!description.contains("(null)"), "\(description)")
        #expect(!description.contains("Code=<redacted>"), "\(description)")
        #expect(!description.contains("refused-5ecret-1"), "\(description)")
        if error.underlying is URLError {
            #expect(description.contains("URLError.cannotConnectToHost (Code=-1004)"), "\(description)")
            #expect(!description.contains("Error Domain="), "\(description)")
        } else {
            #expect(description.contains("connection refused"), "\(description)")
        }
    }

    @Test(
        "a URLError underneath is shown by its code's name and number and the client's explanation",
        arguments: [
            (URLError.Code.cannotConnectToHost, "URLError.cannotConnectToHost (Code=-1004)"),
            (.networkConnectionLost, "URLError.networkConnectionLost (Code=-1005)"),
            (.timedOut, "URLError.timedOut (Code=-1001)"),
            (.notConnectedToInternet, "URLError.notConnectedToInternet (Code=-1009)"),
            (.secureConnectionFailed, "URLError.secureConnectionFailed (Code=-1200)"),
        ]
    )
    func urlErrorNames(code: URLError.Code, expected: String) {
        let failing = URL(string: "https://user:pa55-5ecret@api.example.test/a?token=t0ken-5ecret")!
        let underlying = URLError(
            code,
            userInfo: [
                NSLocalizedDescriptionKey: "Failed for https://api.example.test/a?token=t0ken-5ecret",
                NSURLErrorFailingURLErrorKey: failing,
            ]
        )
        let error = CourierError(.transport, message: "the transport failed", underlying: underlying)
        #expect(
            error.description.hasSuffix(
                "(underlying: \(expected): Failed for https://api.example.test/a?token=<redacted>)"
            ),
            "\(error.description)"
        )
        var dumped = ""
        dump(error, to: &dumped)
        #expect(dumped.contains(expected), "\(dumped)")
        #expect(!dumped.contains("5ecret"), "\(dumped)")
    }

    @Test("a URLError without an explanation of its own is shown by its code alone")
    func urlErrorWithoutExplanation() {
        let error = CourierError(.transport, message: "m", underlying: URLError(.cannotFindHost))
        #expect(
            error.description.hasSuffix("(underlying: URLError.cannotFindHost (Code=-1003))"),
            "\(error.description)"
        )
    }

    @Test(
        "a POSIXError underneath is shown by its code's name, number and text",
        arguments: [
            (POSIXErrorCode.ECONNREFUSED, "ECONNREFUSED"), (.ECONNRESET, "ECONNRESET"), (.ETIMEDOUT, "ETIMEDOUT"),
            (.EHOSTUNREACH, "EHOSTUNREACH"),
        ]
    )
    func posixErrorNames(code: POSIXErrorCode, name: String) {
        let error = CourierError(.transport, message: "m", underlying: POSIXError(code))
        let text = String(cString: strerror(code.rawValue))
        #expect(
            error.description.hasSuffix("(underlying: POSIXError.\(name) (Code=\(code.rawValue)): \(text))"),
            "\(error.description)"
        )
    }

    @Test("a socket error code the platform reports with a URLError is named in the message")
    func posixReasonFromURLError() {
        let request = URLRequest(url: URL(string: "https://api.example.test:8443/a")!)
        let underlying = URLError(
            .cannotConnectToHost,
            userInfo: [
                "_kCFStreamErrorDomainKey": 1, "_kCFStreamErrorCodeKey": Int(POSIXErrorCode.ECONNREFUSED.rawValue),
            ]
        )
        let error = TransportFailure.describing(underlying, request: request) as? CourierError
        #expect(error?.message == "cannot connect to api.example.test:8443 (connection refused)")
        let plain = TransportFailure.describing(URLError(.cannotConnectToHost), request: request) as? CourierError
        #expect(plain?.message == "cannot connect to api.example.test:8443")
    }
}

@Suite("A socket error number from user-info never traps")
struct SocketReasonNumberTests {
    @Test("an errno out of Int32's range names no reason", arguments: [Int.max, Int.min, 1 << 40, -(1 << 40)])
    func outOfRange(number: Int) {
        let error = URLError(
            .cannotConnectToHost,
            userInfo: ["_kCFStreamErrorDomainKey": 1, "_kCFStreamErrorCodeKey": number]
        )
        #expect(TransportFailure.socketReason(of: error) == nil)
    }

    @Test("an errno in range still names its reason")
    func inRange() {
        let error = URLError(
            .cannotConnectToHost,
            userInfo: ["_kCFStreamErrorDomainKey": 1, "_kCFStreamErrorCodeKey": Int(ECONNREFUSED)]
        )
        #expect(TransportFailure.socketReason(of: error) != nil)
    }
}
