// The code of the OpenAPI article (Sources/Courier/Documentation.docc/OpenAPI.md), word for word: the app's
// factory that plugs Courier into the generated client, and the test of it with CourierTesting. The root
// package's OpenAPIArticleTests checks that each Swift block of the article (but its manifest) is in this file,
// so the article cannot drift from code that compiles and passes.

import Courier
import CourierTesting
import Foundation
import OpenAPIExample
import OpenAPIRuntime
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// openapi-article.factory.begin
/// The generated client, sending through a Courier client with the recommended stack, but for
/// `.validatingStatus()`: documented statuses (a 404 here) arrive as the generated `Output`'s cases.
func itemsAPI(
    baseURL: URL,
    auth: TokenRefresher,
    transport: any Transport = URLSessionTransport(),
    clock: some Clock<Duration> = ContinuousClock()
) throws -> OpenAPIExample.Client {
    let courier = Courier.Client(
        baseURL: baseURL,
        transport: transport,
        middleware: [
            .counting(RequestCounter()),
            .logging(),
            .timeout(.seconds(10), clock: clock),
            .retry(.default, clock: clock),
            .authenticating(with: auth),
            .timeout(.seconds(2), clock: clock),
            .followingRedirects(),
        ]
    )
    // The document's server URL is relative (`/openapi`): it is appended to the Courier client's baseURL.
    return OpenAPIExample.Client(
        serverURL: try Servers.Server1.url(),
        transport: OpenAPIClientTransport(client: courier)
    )
}
// openapi-article.factory.end

@Suite("The OpenAPI article's example, tested with CourierTesting")
struct OpenAPIArticleTests {
    // openapi-article.test.begin
    @Test(
        "getItem: a 503 is retried, the item decodes, and a 404 is the generated notFound case",
        .timeLimit(.minutes(1)),
        .mockTransport {
            MockRoute.get("/v1/openapi/realms/north/items/7")
                .replies(.serviceUnavailable(), then: .json(#"{"id":"7","name":"lamp","realm":"north"}"#))
                .expectCalls(2)
            MockRoute.get("/v1/openapi/realms/north/items/:id")
                .replies(.json(#"{"reason":"No such item."}"#, status: 404))
        }
    )
    func getItem() async throws {
        let clock = ManualClock()
        let auth = TokenRefresher(token: .init("token-1", expiresIn: .seconds(3600)), clock: clock) { _ in
            .init("token-2", expiresIn: .seconds(3600))
        }
        let api = try itemsAPI(
            baseURL: URL(string: "https://api.example.com/v1")!,
            auth: auth,
            transport: TestTransport(),
            clock: clock
        )

        let item = try await clock.run { try await api.getItem(path: .init(realm: "north", id: "7")).ok.body.json }
        #expect(item == .init(id: "7", name: "lamp", realm: "north"))

        let missing = try await clock.run { try await api.getItem(path: .init(realm: "north", id: "8")) }
        #expect(try missing.notFound.body.json.reason == "No such item.")

        let sent = try #require(MockTransport.current?.lastRequest)
        #expect(sent.header("Authorization") == "Bearer token-1")
    }
    // openapi-article.test.end
}
