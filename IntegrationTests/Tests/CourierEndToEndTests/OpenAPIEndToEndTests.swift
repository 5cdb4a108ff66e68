import Courier
import Foundation
import OpenAPIExample
import OpenAPIRuntime
import TestServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("A generated OpenAPI client sending through Courier", .serialized, .endToEndLimit(minutes: 5))
struct OpenAPIEndToEndTests {
    /// A Courier client of the server that authenticates with a token the server has already expired, and
    /// refreshes it from the realm's token endpoint; the refresher is returned so its refreshes can be counted.
    static func expiredTokenClient(
        _ server: RunningServer,
        realm: String,
        kind: TransportKind,
        connections: Int? = nil
    ) async throws -> (client: Courier.Client, refresher: TokenRefresher) {
        let tokenClient = Courier.Client(
            baseURL: server.baseURL,
            transport: kind.make(),
            middleware: [.validatingStatus()]
        )
        let expired: TokenResponse = try await tokenClient.send(
            .post("/auth/\(realm)/token", query: ["expiresIn": 0])
        )
        let refresher = TokenRefresher(token: .init(expired.token)) { _ in
            let reply: TokenResponse = try await tokenClient.send(.post("/auth/\(realm)/token"))
            return .init(reply.token, expiresIn: .seconds(reply.expiresIn))
        }
        let client = Courier.Client(
            baseURL: server.baseURL,
            transport: kind.make(connections: connections),
            middleware: [.authenticating(with: refresher)]
        )
        return (client, refresher)
    }

    /// The generated client, sending through `courier`. The document's server URL is relative (`/openapi`): it is
    /// resolved against the Courier client's baseURL.
    static func api(_ courier: Courier.Client) throws -> OpenAPIExample.Client {
        OpenAPIExample.Client(serverURL: try Servers.Server1.url(), transport: OpenAPIClientTransport(client: courier))
    }

    @Test(
        "1,000 concurrent generated-client calls with an expired token: exactly 1 refresh, and all succeed",
        arguments: TransportKind.allCases
    )
    func thousandCallsOneRefresh(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let realm = uniqueKey()
            let (courier, refresher) = try await Self.expiredTokenClient(
                server,
                realm: realm,
                kind: kind,
                connections: 64
            )
            let api = try Self.api(courier)
            let items = try await withThrowingTaskGroup(of: Components.Schemas.Item.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        try await api.getItem(path: .init(realm: realm, id: "\(index)")).ok.body.json
                    }
                }
                var items: [Components.Schemas.Item] = []
                for try await item in group { items.append(item) }
                return items
            }
            #expect(Set(items.map(\.id)) == Set((0..<1000).map(String.init)))
            #expect(items.allSatisfy { $0.realm == realm && $0.name == "Item \($0.id)" })
            #expect(refresher.refreshCount == 1)
            let stats = try await Inspector(server).authStats(realm)
            // The expired token and the one refresh.
            #expect(stats.issued == 2)
            #expect(stats.accepted == 1000)
        }
    }

    @Test(
        "documented statuses arrive as the generated Output's cases; a request body is sent",
        arguments: TransportKind.allCases
    )
    func documentedStatusesAndBody(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let realm = uniqueKey()
            let (courier, _) = try await Self.expiredTokenClient(server, realm: realm, kind: kind)
            let api = try Self.api(courier)
            let created = try await api.createItem(path: .init(realm: realm), body: .json(.init(name: "lamp")))
            #expect(try created.created.body.json == .init(id: "new-lamp", name: "lamp", realm: realm))
            let missing = try await api.getItem(path: .init(realm: realm, id: "missing"))
            #expect(try missing.notFound.body.json.reason == "No such item.")
        }
    }

    @Test(
        "Courier's errors reach the caller as ClientError's underlyingError (here: .validatingStatus() and a 404)",
        arguments: TransportKind.allCases
    )
    func courierErrorsSurface(kind: TransportKind) async throws {
        try await TestServers.withServer { server in
            let realm = uniqueKey()
            let (authenticating, _) = try await Self.expiredTokenClient(server, realm: realm, kind: kind)
            await authenticating.update { $0.middleware.append(.validatingStatus()) }
            let api = try Self.api(authenticating)
            let error = try await #require(throws: ClientError.self) {
                _ = try await api.getItem(path: .init(realm: realm, id: "missing"))
            }
            let courierError = try #require(error.underlyingError as? CourierError, "\(error)")
            #expect(courierError.code == .unacceptableStatus)
            #expect(courierError.statusCode == 404)
            #expect(error.operationID == "getItem")
        }
    }
}
