import Courier
import CourierTesting
import Foundation
import Testing

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

/// A URL for requests that only ever reach in-memory transports, with a path and a query.
let testURL = URL(string: "https://api.example.test/v1/items?page=2")!

/// A request for `url` with `method`.
func urlRequest(_ url: String, method: String = "GET") -> URLRequest {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    return request
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

    /// A mock that counts each call in `arrived`, then answers 200 once `gate` opens. Cancelling the call
    /// does not end the wait, as with a transport that cannot be interrupted.
    static func held(by gate: Gate, counting arrived: Arrivals) -> MockTransport {
        MockTransport { _ in
            arrived.arrive()
            await gate.wait()
            return .ok
        }
    }

    /// A mock whose every call takes `duration` on `clock` (it moves the clock on) and then answers `response`.
    static func taking(_ duration: Duration, on clock: ManualClock, _ response: MockResponse = .ok) -> MockTransport {
        MockTransport { _ in
            clock.advance(by: duration)
            return response
        }
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

    /// The body as sent: `httpBody`, or what `httpBodyStream` yields, read to its end (so a stream can be read
    /// only once).
    func readBody() -> Data {
        if let body = httpBody { return body }
        guard let stream = httpBodyStream else { return Data() }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1024)
        while case let count = stream.read(&buffer, maxLength: buffer.count), count > 0 {
            data.append(contentsOf: buffer[..<count])
        }
        return data
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

/// An error that quotes something in its description, as errors from other libraries do.
struct QuotingError: Error, CustomStringConvertible {
    let description: String
}

/// A middleware that throws a ``QuotingError`` with `description` instead of going on.
func failing(quoting description: String) -> Middleware {
    Middleware { _, _ in throw QuotingError(description: description) }
}

extension Locked<Int> {
    /// Adds one and returns the new count: which call this is, for a closure that counts its calls.
    func increment() -> Int {
        withLock { count in
            count += 1
            return count
        }
    }
}

/// Sends `request` through `client`, cancels the caller once the transport has counted the request in
/// `arrived`, and expects the call to end with `CancellationError`.
func expectCancellation(
    sending request: URLRequest,
    through client: Client,
    arrived: Arrivals,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let arrivals = arrived.count + 1
    let call = Task { try await client.send(request) }
    await arrived.wait(for: arrivals)
    call.cancel()
    await #expect(throws: CancellationError.self, sourceLocation: sourceLocation) { try await call.join() }
}
