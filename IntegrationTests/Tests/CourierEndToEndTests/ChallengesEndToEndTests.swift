import Courier
import Foundation
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A 401 or 407 that asks for credentials, and a refused connection, end promptly over both transports.
///
/// On Linux, FoundationNetworking (Swift 6.3.x) waits on a 401 with `WWW-Authenticate: Basic realm=…` until the
/// request times out; the transports the tests make give a request 300 seconds, past the suite's time limit, so
/// a hang fails the test. AsyncHTTPClient's pool, left to its defaults, tries a refused connection again until
/// its connect timeout, which the tests' transports set to 5 minutes.
@Suite("Credential challenges and refused connections over real sockets", .endToEndLimit(minutes: 3))
struct ChallengesEndToEndTests {
    /// A generous bound for "promptly": far below the 300-second request timeout and the 5-minute connect
    /// timeout, far above a loaded machine's slowest loopback exchanges (with the whole suite running in
    /// parallel on two cores, a test of three requests has taken 32 seconds).
    static let prompt = Duration.seconds(120)

    /// Runs `operation` and expects it to have ended promptly.
    static func promptly<Result>(
        sourceLocation: SourceLocation = #_sourceLocation,
        _ operation: () async throws -> Result
    ) async throws -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await operation()
        #expect(start.duration(to: clock.now) < prompt, sourceLocation: sourceLocation)
        return result
    }

    @Test(
        "A 401 or 407 asking for credentials comes back as the response, with its body",
        arguments: TransportKind.allCases,
        ["basic", "digest", "negotiate", "proxy"]
    )
    func challengeIsAResponse(kind: TransportKind, scheme: String) async throws {
        try await EndToEnd.run(kind) { e2e in
            let url = e2e.server.url("/challenge/\(scheme)", query: ["countKey": e2e.key])
            let (data, response) = try await Self.promptly { try await e2e.client().send(URLRequest(url: url)) }
            #expect(response.statusCode == (scheme == "proxy" ? 407 : 401))
            #expect(String(decoding: data, as: UTF8.self).contains("Credentials required."))
            #expect(try await e2e.inspector.counters(e2e.key).hits == 1)
        }
    }

    /// `nil` for `retry(.default)`, which does not retry a 401; else a policy that retries a 401 up to this
    /// many attempts.
    static let retryingUnauthorized: [Int?] = [nil, 3]

    @Test(
        "A Basic 401 under validatingStatus is unacceptableStatus, promptly after each attempt the retry allows",
        arguments: TransportKind.allCases,
        retryingUnauthorized
    )
    func basicUnauthorizedIsValidated(kind: TransportKind, attempts: Int?) async throws {
        try await EndToEnd.run(kind) { e2e in
            let policy = attempts.map {
                RetryPolicy(maximumAttempts: $0, backoff: .immediate, retryableStatuses: [401], budget: nil)
            }
            let client = e2e.client([.retry(policy ?? .default), .validatingStatus()])
            let error = try await Self.promptly {
                try await #require(throws: CourierError.self) {
                    try await client.send(Request<Data>.get("/basic-auth/u/p", query: ["countKey": .init(e2e.key)]))
                }
            }
            #expect(error.code == .unacceptableStatus)
            #expect(error.statusCode == 401)
            #expect(error.responseHeaders.keys.contains { $0.lowercased() == "www-authenticate" })
            #expect(try await e2e.inspector.counters(e2e.key).hits == attempts ?? 1)
        }
    }

    @Test(
        "A TokenRefresher sees the Basic 401, refreshes once, and the retried request is accepted",
        arguments: TransportKind.allCases
    )
    func refresherSeesBasicUnauthorized(kind: TransportKind) async throws {
        try await EndToEnd.run(kind) { e2e in
            let wrong = Data("u:wrong".utf8).base64EncodedString()
            let right = Data("u:p".utf8).base64EncodedString()
            let refresher = TokenRefresher(token: .init(wrong)) { _ in .init(right) }
            let client = e2e.client([
                .retry(.default),
                .authenticating(with: refresher, scheme: AuthorizationScheme(scheme: "Basic")),
                .validatingStatus(),
            ])
            let body: BasicAuthResponse = try await client.send(
                .get("/basic-auth/u/p", query: ["countKey": .init(e2e.key)])
            )
            #expect(body == BasicAuthResponse(user: "u"))
            #expect(refresher.refreshCount == 1)
            #expect(try await e2e.inspector.counters(e2e.key).hits == 2)
        }
    }

    @Test(
        "A refused connection fails promptly with transport, saying it could not connect",
        arguments: TransportKind.allCases
    )
    func refusedConnection(kind: TransportKind) async throws {
        let port = try RefusingPort()
        let client = Client(baseURL: port.url, transport: kind.make())
        let error = try await Self.promptly {
            try await #require(throws: CourierError.self) { try await client.send(Request<Data>.get("/nobody-home")) }
        }
        #expect(error.code == .transport)
        #expect(error.message.hasPrefix("cannot connect to 127.0.0.1:\(port.port)"))
        #expect(RetryPolicy.isTransient(error))
    }
}
