import Courier
import Foundation
import TestServer
import Testing

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

/// A 401 or 407 that asks for credentials, and a refused connection, end promptly over both transports.
///
/// On Linux, FoundationNetworking (Swift 6.3.x) waits on a 401 with `WWW-Authenticate: Basic realm=…` until the
/// request times out; the transports the tests make give a request 300 seconds, past the suite's time limit, so
/// a hang fails the test. AsyncHTTPClient's pool, left to its defaults, tries a refused connection again until
/// its connect timeout, which the tests' transports set to 5 minutes.
@Suite("Credential challenges and refused connections over real sockets", .timeLimit(.minutes(3)))
struct ChallengesEndToEndTests {
    /// A generous bound for "promptly": far below the 300-second request timeout and the 5-minute connect
    /// timeout, far above a loaded machine's slowest loopback exchanges (with the whole suite running in
    /// parallel on two cores, a test of three requests has taken 32 seconds).
    static let prompt = Duration.seconds(120)

    @Test(
        "A 401 or 407 asking for credentials comes back as the response, with its body",
        arguments: TransportKind.allCases,
        ["basic", "digest", "negotiate", "proxy"]
    )
    func challengeIsAResponse(kind: TransportKind, scheme: String) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = kind.client(of: server)
            let clock = ContinuousClock()
            let start = clock.now
            let (data, response) = try await client.send(
                URLRequest(url: server.url("/challenge/\(scheme)", query: ["countKey": key]))
            )
            #expect(start.duration(to: clock.now) < Self.prompt)
            #expect(response.statusCode == (scheme == "proxy" ? 407 : 401))
            #expect(String(decoding: data, as: UTF8.self).contains("Credentials required."))
            #expect(try await Inspector(server).counters(key).hits == 1)
        }
    }

    @Test(
        "A Basic 401 under validatingStatus is unacceptableStatus at once; retry(.default) sends it once",
        arguments: TransportKind.allCases
    )
    func basicUnauthorizedIsValidated(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let client = kind.client(of: server, middleware: [.retry(.default), .validatingStatus()])
            let clock = ContinuousClock()
            let start = clock.now
            let error = try await #require(throws: CourierError.self) {
                try await client.send(Request<Data>.get("/basic-auth/u/p", query: ["countKey": .init(key)]))
            }
            #expect(start.duration(to: clock.now) < Self.prompt)
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 401)
            #expect(error.responseHeaders.keys.contains { $0.lowercased() == "www-authenticate" })
            #expect(try await Inspector(server).counters(key).hits == 1)
        }
    }

    @Test(
        "Retrying a Basic 401 retries promptly each time, up to the attempts allowed",
        arguments: TransportKind.allCases
    )
    func basicUnauthorizedRetried(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let policy = RetryPolicy(maximumAttempts: 3, backoff: .immediate, retryableStatuses: [401], budget: nil)
            let client = kind.client(of: server, middleware: [.retry(policy), .validatingStatus()])
            let clock = ContinuousClock()
            let start = clock.now
            let error = try await #require(throws: CourierError.self) {
                try await client.send(Request<Data>.get("/challenge/basic", query: ["countKey": .init(key)]))
            }
            #expect(start.duration(to: clock.now) < Self.prompt)
            #expect(error.statusCode == 401)
            #expect(try await Inspector(server).counters(key).hits == 3)
        }
    }

    @Test(
        "A TokenRefresher sees the Basic 401, refreshes once, and the retried request is accepted",
        arguments: TransportKind.allCases
    )
    func refresherSeesBasicUnauthorized(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let key = uniqueKey()
            let wrong = Data("u:wrong".utf8).base64EncodedString()
            let right = Data("u:p".utf8).base64EncodedString()
            let refresher = TokenRefresher(token: .init(wrong)) { _ in .init(right) }
            let client = Client(
                baseURL: server.baseURL,
                transport: kind.make(),
                middleware: [
                    .retry(.default),
                    .authenticating(with: refresher, scheme: AuthorizationScheme(scheme: "Basic")),
                    .validatingStatus(),
                ]
            )
            let body: [String: AnyCodableValue] = try await client.send(
                .get("/basic-auth/u/p", query: ["countKey": .init(key)])
            )
            #expect(body["authenticated"] == .bool(true))
            #expect(body["user"] == .string("u"))
            #expect(refresher.refreshCount == 1)
            #expect(try await Inspector(server).counters(key).hits == 2)
        }
    }

    @Test(
        "A refused connection fails promptly with transport, saying it could not connect",
        arguments: TransportKind.allCases
    )
    func refusedConnection(kind: TransportKind) async throws {
        let port = try RefusingPort()
        let client = Client(baseURL: port.url, transport: kind.make())
        let clock = ContinuousClock()
        let start = clock.now
        let error = try await #require(throws: CourierError.self) {
            try await client.send(Request<Data>.get("/nobody-home"))
        }
        #expect(start.duration(to: clock.now) < Self.prompt)
        #expect(error.code == .transport)
        #expect(error.message.hasPrefix("cannot connect to 127.0.0.1:\(port.port)"))
        #expect(RetryPolicy.isTransient(error))
    }
}

/// A JSON value of the few kinds `/basic-auth` answers.
enum AnyCodableValue: Decodable, Equatable, Sendable {
    case bool(Bool)
    case string(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }
}

/// A port on 127.0.0.1 that is bound but not listening, so that a connection to it is refused at once; the
/// port stays taken (and refusing) until the value is released.
final class RefusingPort: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        #if canImport(Glibc) || canImport(Musl)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw RefusingPortError(operation: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw RefusingPortError(operation: "bind")
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }

    /// `http://127.0.0.1:PORT`.
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
}

struct RefusingPortError: Error {
    let operation: String
}
