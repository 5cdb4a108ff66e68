import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every layer that sends a request again asks the same question — can its body be sent again? — and a
/// body that cannot is refused with a clear error, never sent empty.
@Suite("Sending a body again", .timeLimit(.minutes(1)))
struct BodyReplayTests {
    static let url = URL(string: "https://api.example.test/files/1")!

    /// Which layer would send the request again, and the reply that makes it do so.
    enum Resender: String, CaseIterable, NamedByRawValue, Sendable {
        case retry, refreshAndRestart, temporaryRedirect, permanentRedirect

        var middleware: [Middleware] {
            switch self {
            case .retry:
                [.retry(RetryPolicy(maximumAttempts: 3, backoff: .immediate)), .validatingStatus()]
            case .refreshAndRestart:
                [.authenticating(with: TokenRefresher(token: .init("t1-abcdefgh")) { _ in .init("t2-abcdefgh") })]
            case .temporaryRedirect, .permanentRedirect:
                [.followingRedirects()]
            }
        }

        /// The first reply; every later request gets 200.
        var first: MockResponse {
            switch self {
            case .retry: .status(503)
            case .refreshAndRestart: .status(401)
            case .temporaryRedirect: .status(307, headers: ["Location": "/files/2"])
            case .permanentRedirect: .status(308, headers: ["Location": "/files/2"])
            }
        }
    }

    /// A transport that records each body it received, read to the end, then answers `first`, then 200.
    private final class BodyRecorder: Sendable {
        let bodies = Locked<[Data]>([])
        let transport: MockTransport

        init(first: MockResponse) {
            let bodies = self.bodies
            let replies = Locked([first])
            transport = MockTransport(
                .handler { request in
                    bodies.withLock { $0.append(request.urlRequest.readBody()) }
                    return replies.withLock { $0.isEmpty ? .ok : $0.removeFirst() }
                }
            )
        }
    }

    private func put(body: (inout URLRequest) -> Void) -> URLRequest {
        var request = URLRequest(url: Self.url)
        request.httpMethod = "PUT"
        body(&request)
        return request
    }

    @Test(
        "a one-shot body stream is refused with bodyNotReplayable instead of being sent again empty",
        arguments: Resender.allCases
    )
    func oneShotStreamRefused(_ resender: Resender) async throws {
        let recorder = BodyRecorder(first: resender.first)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        let request = put { $0.httpBodyStream = InputStream(data: Data("hello world".utf8)) }
        let error = try await #require(throws: CourierError.self) { try await client.send(request) }
        #expect(error.code == .bodyNotReplayable)
        #expect(error.message.contains("httpBodyStream"))
        #expect(recorder.bodies.value == [Data("hello world".utf8)])
    }

    @Test("a Data body is sent again byte for byte", arguments: Resender.allCases)
    func dataBodyReplayed(_ resender: Resender) async throws {
        let recorder = BodyRecorder(first: resender.first)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        let request = put { $0.httpBody = Data("hello world".utf8) }
        _ = try await client.send(request)
        #expect(recorder.bodies.value == [Data("hello world".utf8), Data("hello world".utf8)])
    }

    @Test("a one-shot stream whose request is not sent again goes through untouched", arguments: Resender.allCases)
    func oneShotStreamSentOnce(_ resender: Resender) async throws {
        let recorder = BodyRecorder(first: .ok)
        let client = Client(baseURL: exampleBaseURL, transport: recorder.transport, middleware: resender.middleware)
        let request = put { $0.httpBodyStream = InputStream(data: Data("hello world".utf8)) }
        _ = try await client.send(request)
        #expect(recorder.bodies.value == [Data("hello world".utf8)])
    }
    @Test(
        "a refresh restarts a POST without an idempotency key only after its credential was rejected",
        arguments: [(401, 2), (403, 1), (500, 1), (503, 1)]
    )
    func refreshRestartsOnlyARejectedPOST(_ status: Int, calls: Int) async throws {
        let transport = MockTransport(.status(status), then: .ok)
        let refresher = TokenRefresher(token: .init("t1-abcdefgh")) { _ in .init("t2-abcdefgh") }
        let client = Client(
            baseURL: exampleBaseURL,
            transport: transport,
            middleware: [.authenticating(with: refresher)]
        )
        var request = URLRequest(url: exampleBaseURL.appendingPathComponent("orders"))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"item":7}"#.utf8)
        _ = try await client.send(request)
        #expect(transport.callCount == calls)
        #expect(transport.requests.allSatisfy { $0.httpBody == request.httpBody })
    }
}
