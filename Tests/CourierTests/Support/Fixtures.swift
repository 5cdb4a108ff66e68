import Courier
import CourierTesting
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The base URL most tests use; nothing is ever sent there (the transports are in memory).
let exampleBaseURL = URL(string: "https://api.example.test")!

/// A model the decoding tests use.
struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

/// The API error body of the example: `{"error":true,"code":999,"reason":"Invalid Token."}`.
struct APIError: Codable, Sendable, Equatable {
    var error: Bool
    var code: Int
    var reason: String
}

extension MockTransport {
    /// A mock that counts each call in `arrived` and then hangs until the call is cancelled; it counts the
    /// cancellation in `cancellationCount`.
    static func hanging(counting arrived: Arrivals) -> MockTransport {
        MockTransport(
            .handler { _ in
                arrived.arrive()
                return .hang
            }
        )
    }

    /// The one request this mock received, or a test failure.
    var onlyRequest: URLRequest? {
        let requests = self.requests
        return requests.count == 1 ? requests[0] : nil
    }
}

extension URLRequest {
    /// The URL's percent-encoded query as sent, or `nil`.
    var encodedQuery: String? {
        url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.percentEncodedQuery }
    }

    /// The body as UTF-8 text.
    var bodyText: String? {
        httpBody.map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Sends `request` with a client over a `MockTransport` answering `reply`, and returns what the
/// transport received.
func sent<R>(
    _ request: Request<R>,
    baseURL: URL? = exampleBaseURL,
    encoder: JSONEncoder = JSONEncoder(),
    reply: MockResponse = .ok
) async throws -> URLRequest? {
    let transport = MockTransport(reply)
    let client = Client(baseURL: baseURL, transport: transport, encoder: encoder)
    _ = try await client.response(for: request)
    return transport.onlyRequest
}
