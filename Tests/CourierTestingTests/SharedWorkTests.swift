import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `TokenRefresher`'s refresh is work of the refresher's own, shared by every caller it serves; the test kit
/// reaches it: `ManualClock.run` counts it (time does not move to a timeout while a refresh runs), and a test's
/// transport answers the requests it sends.
@Suite("The test kit reaches a token refresh")
struct SharedWorkTests {
    /// The newcomer's service: the recommended stack on a manual clock, whose refresh asks a token endpoint
    /// through the same client (as the docs allow).
    private struct Service {
        let client: Client
        let refreshes = Locked(0)

        init(clock: ManualClock, transport: some Transport) {
            let refreshes = self.refreshes
            let box = ClientBox()
            let auth = TokenRefresher(token: .init("old-token"), clock: clock) { _ in
                refreshes.withLock { $0 += 1 }
                let token: [String: String] = try await box.client!.send(SharedWorkTests.tokenRequest)
                return .init(token["access_token"]!)
            }
            client = Client(
                baseURL: URL(string: "https://api.example.test")!,
                transport: transport,
                middleware: [
                    .counting(RequestCounter()),
                    .timeout(.seconds(10), clock: clock),
                    .retry(.default, clock: clock),
                    .authenticating(with: auth),
                    .timeout(.seconds(2), clock: clock),
                    .validatingStatus(),
                ]
            )
            box.client = client
        }

        func whoAmI() async throws -> String {
            try await client.send(.get("/v1/me"))
        }
    }

    /// The token endpoint's request, as a refresh closure sends it.
    static let tokenRequest = Request<[String: String]>.post(
        "/oauth/token",
        body: .form(["grant_type": "refresh_token"])
    )

    /// Holds the client for the refresh closure, which is made before the client is.
    private final class ClientBox: @unchecked Sendable {
        // Written once, before any request is sent; read only by the refresh that a request starts.
        var client: Client?
    }

    /// 503, then 401 with the old token, one refresh, then 200: the API the newcomer tested.
    private static func newcomerAPI() -> MockTransport {
        MockTransport(
            .handler { request in
                switch (request.urlRequest.url!.path, request.header("Authorization")) {
                case ("/oauth/token", _): return .json(#"{"access_token":"new-token"}"#)
                case ("/v1/me", _) where request.callIndex == 0: return .serviceUnavailable()
                case ("/v1/me", "Bearer new-token"): return .text("ada")
                case ("/v1/me", _): return .unauthorized()
                default: return .status(404)
                }
            }
        )
    }

    @Test(
        "503, 401, one refresh, 200 under the recommended stack, driven by clock.run: the same end 1,000 runs in a row",
        .timeLimit(.minutes(2))
    )
    func newcomerScenario() async throws {
        for run in 0..<1_000 {
            let clock = ManualClock()
            let transport = Self.newcomerAPI()
            let service = Service(clock: clock, transport: transport)
            let name = try await clock.run { try await service.whoAmI() }
            #expect(name == "ada", "run \(run)")
            #expect(service.refreshes.value == 1, "run \(run)")
            // Only the retry's backoff moved time: no timeout fired while the refresh ran.
            #expect(clock.now.offset < .seconds(2), "run \(run): the clock moved to \(clock.now.offset)")
            #expect(transport.requests.map(\.url!.path) == ["/v1/me", "/v1/me", "/oauth/token", "/v1/me"])
            if clock.now.offset >= .seconds(2) || name != "ada" { break }
        }
    }

    @Test(
        "the .mockTransport trait answers the requests a refresh sends through a TestTransport client",
        .timeLimit(.minutes(1)),
        .mockTransport {
            MockRoute.post("/oauth/token").replies(.json(#"{"access_token":"new-token"}"#)).expectCalls(1)
            MockRoute.get("/v1/me").matchingHeader("Authorization", "Bearer new-token").replies(.text("ada"))
            MockRoute.get("/v1/me").replies(.unauthorized())
        }
    )
    func traitReachesRefresh() async throws {
        let tokens = Client(baseURL: URL(string: "https://api.example.test")!, transport: TestTransport())
        let auth = TokenRefresher(token: .init("old-token")) { _ in
            let token: [String: String] = try await tokens.send(Self.tokenRequest)
            return .init(token["access_token"]!)
        }
        let client = Client(
            baseURL: URL(string: "https://api.example.test")!,
            transport: TestTransport(),
            middleware: [.authenticating(with: auth)]
        )
        let name: String = try await client.send(.get("/v1/me"))
        #expect(name == "ada")
    }
}
