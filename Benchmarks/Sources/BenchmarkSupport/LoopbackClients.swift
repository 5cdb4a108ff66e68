public import AsyncHTTPClient
public import Courier
public import Foundation
public import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A loopback server and every client measured against it: the bare ones (what a caller without Courier
/// writes) and Courier over each transport, with and without middleware. The end-to-end benchmarks start one
/// per benchmark; the transport scenarios share one per process.
public final class LoopbackClients: Sendable {
    /// The server, answering every request with the same small JSON body.
    public let server: LoopbackServer
    /// A GET with the headers the default stack would add, set up front for the bare clients.
    public let request: URLRequest
    /// The bare `URLSession`.
    public let session: URLSession
    /// The bare `HTTPClient`, with the configuration Courier's transport uses (redirects are Courier's job).
    public let httpClient: HTTPClient
    private let httpClientRequest: HTTPClientRequest
    /// Courier's transport over a session of its own.
    public let sessionTransport: URLSessionTransport
    /// Courier's transport over ``httpClient`` (borrowed), so that Courier and the bare calls share one
    /// connection pool configuration and event loop group.
    public let ahcTransport: AsyncHTTPClientTransport
    /// Courier with no middleware over ``sessionTransport``.
    public let sessionCourier: Client
    /// Courier with the default stack over ``sessionTransport``.
    public let sessionStackCourier: Client
    /// Courier with no middleware over ``ahcTransport``.
    public let ahcCourier: Client
    /// Courier with the default stack over ``ahcTransport``.
    public let ahcStackCourier: Client
    /// The default stack minus its two timeouts over ``ahcTransport``: where the end-to-end difference comes
    /// from.
    public let ahcUntimedCourier: Client
    /// The timeout layer alone over ``ahcTransport``.
    public let ahcTimeoutCourier: Client

    private init(server: LoopbackServer) {
        self.server = server
        var request = URLRequest(url: URL(string: server.url)!)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("Bearer \(DefaultStack.token)", forHTTPHeaderField: "Authorization")
        self.request = request
        session = URLSession(configuration: .default)
        httpClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientTransport.defaultConfiguration
        )
        var httpClientRequest = HTTPClientRequest(url: server.url)
        httpClientRequest.headers.add(name: "Accept", value: "application/json")
        httpClientRequest.headers.add(name: "Authorization", value: "Bearer \(DefaultStack.token)")
        self.httpClientRequest = httpClientRequest
        sessionTransport = URLSessionTransport()
        ahcTransport = AsyncHTTPClientTransport(client: httpClient)
        sessionCourier = Client(transport: sessionTransport)
        sessionStackCourier = Client(transport: sessionTransport, middleware: DefaultStack.middleware())
        ahcCourier = Client(transport: ahcTransport)
        ahcStackCourier = Client(transport: ahcTransport, middleware: DefaultStack.middleware())
        ahcUntimedCourier = Client(
            transport: ahcTransport,
            middleware: DefaultStack.middleware().filter { $0.name != "timeout" }
        )
        ahcTimeoutCourier = Client(transport: ahcTransport, middleware: [.timeout(.seconds(10))])
    }

    /// Starts a server and makes the clients.
    public static func start() async throws -> LoopbackClients {
        LoopbackClients(server: try await LoopbackServer.start())
    }

    /// What a caller of AsyncHTTPClient writes to get a whole small response.
    public func asyncHTTPClientGet() async throws -> (HTTPClientResponse, ByteBuffer) {
        let response = try await httpClient.execute(httpClientRequest, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response, body)
    }

    /// Shuts the clients down, then the server.
    public func shutdown() async throws {
        try await httpClient.shutdown()
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }
}
