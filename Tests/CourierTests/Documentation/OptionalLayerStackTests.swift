import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The stacks the Caching and Rate limiting articles show, built from exactly that code, do what
/// those articles say.
@Suite("The Caching and Rate limiting articles' stacks", .timeLimit(.minutes(1)))
struct OptionalLayerStackTests {
    @Test("the caching stack answers a fresh GET from memory and sends the token with the one request it makes")
    func cachingStack() async throws {
        let apiToken = "api-token-0123456789"
        // What GitHub sends to an authenticated GET: `s-maxage` is what lets a response to a request with a
        // credential be stored at all (RFC 9111 §3.5).
        let headers = ["Cache-Control": "private, max-age=60, s-maxage=60", "ETag": "\"v1\""]
        let transport = MockTransport(.status(200, body: #"{"login":"ada"}"#, headers: headers))
        let client = Client(
            baseURL: URL(string: "https://api.example.com")!,
            transport: transport,
            middleware: [.retry(.default), .authenticating(token: apiToken), .caching(), .validatingStatus()]
        )

        for _ in 0..<3 {
            let (data, response) = try await client.send(URLRequest(url: URL(string: "https://api.example.com/user")!))
            #expect(response.statusCode == 200)
            #expect(String(decoding: data, as: UTF8.self) == #"{"login":"ada"}"#)
        }

        #expect(transport.callCount == 1)
        #expect(transport.onlyRequest?.value(forHTTPHeaderField: "Authorization") == "Bearer \(apiToken)")
    }

    /// The Rate limiting article's stack over a server that allows one request and then says the next window
    /// opens in `reset` seconds.
    private func rateLimitedSecondCall(reset: Int) async throws -> (error: CourierError, transport: MockTransport) {
        let auth = TokenRefresher(token: .init("token-v1-abcdef", expiresIn: .seconds(3600))) { _ in
            .init("token-v2-abcdef", expiresIn: .seconds(3600))
        }
        let transport = MockTransport(
            .status(
                200,
                headers: ["X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "\(reset)"]
            )
        )
        let client = Client(
            baseURL: URL(string: "https://api.example.com/v1")!,
            transport: transport,
            middleware: [
                .timeout(.seconds(30)),
                .retry(.default),
                .authenticating(with: auth),
                .rateLimiting(RateLimitPolicy(maximumWait: .seconds(20))),
                .timeout(.seconds(5)),
                .validatingStatus(),
            ]
        )
        let url = URL(string: "https://api.example.com/v1/items")!
        _ = try await client.send(URLRequest(url: url))
        let error = try await #require(throws: CourierError.self) { try await client.send(URLRequest(url: url)) }
        return (error, transport)
    }

    @Test("the rate-limiting stack: a slot that opens after the call's 30 s deadline fails at once with timedOut")
    func rateLimitingPastDeadline() async throws {
        let (error, transport) = try await rateLimitedSecondCall(reset: 60)
        #expect(error.code == .timedOut)
        #expect(transport.callCount == 1)
    }

    @Test("the rate-limiting stack: a slot further away than maximumWait (20 s) fails at once with rateLimited")
    func rateLimitingPastMaximumWait() async throws {
        let (error, transport) = try await rateLimitedSecondCall(reset: 25)
        #expect(error.code == .rateLimited)
        #expect(transport.callCount == 1)
    }
}
