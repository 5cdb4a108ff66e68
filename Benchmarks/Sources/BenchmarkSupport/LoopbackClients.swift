public import AsyncHTTPClient
public import Courier
public import Foundation
public import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A server on 127.0.0.1 and every client measured against it: the bare ones (what a caller without Courier
/// writes), Courier over each transport in each ``CourierConfiguration``, and swift-openapi-runtime's client
/// over its own transports (``OpenAPIClients``). The end-to-end benchmarks make one per benchmark, against an
/// in-process ``LoopbackServer`` or against nginx; the transport scenarios share one per process.
///
/// Every client sends the same header fields (`Accept`, `Authorization`): a client whose middleware sets
/// `Authorization` is handed ``unauthenticatedRequest``, the others ``request``.
public final class LoopbackClients: Sendable {
    /// The in-process server, or `nil` when the clients call a server of another process (nginx).
    public let server: LoopbackServer?
    /// A GET with the headers the default stack would add, set up front for the bare clients.
    public let request: URLRequest
    /// The same GET without `Authorization`, for the clients whose middleware adds it.
    public let unauthenticatedRequest: URLRequest
    /// The bare `URLSession`, configured as `URLSessionTransport`'s own session is
    /// (`URLSessionTransport.defaultConfiguration`: ephemeral, no URL cache, no cookie storage, no credential
    /// storage), so that a comparison with the transport measures the transport.
    public let session: URLSession
    /// A bare `URLSession` with the `.default` configuration (a URL cache and cookie storage): the baseline the
    /// URLSession comparisons had before issue 17, kept to show what it changed.
    public let defaultSession: URLSession
    /// A bare `URLSession` configured as ``session`` that receives bodies through a delegate that only collects
    /// them (``CollectingSessionDelegate``), as `URLSessionTransport`'s does: the floor of that mechanism.
    public let delegateSession: URLSession
    private let collector: CollectingSessionDelegate
    /// The bare `HTTPClient`, with the configuration Courier's transport uses (redirects are Courier's job).
    public let httpClient: HTTPClient
    private let httpClientRequest: HTTPClientRequest
    /// Courier's transport over a session of its own.
    public let sessionTransport: URLSessionTransport
    /// Courier's transport over ``httpClient`` (borrowed), so that Courier and the bare calls share one
    /// connection pool configuration and event loop group.
    public let ahcTransport: AsyncHTTPClientTransport
    /// Courier over ``sessionTransport``, one client per ``CourierConfiguration`` (by its raw value).
    private let sessionCouriers: [Client]
    /// Courier over ``ahcTransport``, one client per ``CourierConfiguration`` (by its raw value).
    private let ahcCouriers: [Client]
    /// swift-openapi-runtime's clients, over ``httpClient`` and over a session configured like ``session``.
    public let openAPI: OpenAPIClients

    private init(url: String, server: LoopbackServer?) {
        self.server = server
        var request = URLRequest(url: URL(string: url)!)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        unauthenticatedRequest = request
        request.setValue("Bearer \(DefaultStack.token)", forHTTPHeaderField: "Authorization")
        self.request = request
        session = URLSession(configuration: URLSessionTransport.defaultConfiguration)
        defaultSession = URLSession(configuration: .default)
        collector = CollectingSessionDelegate()
        delegateSession = URLSession(
            configuration: URLSessionTransport.defaultConfiguration,
            delegate: collector,
            delegateQueue: nil
        )
        httpClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientTransport.defaultConfiguration
        )
        var httpClientRequest = HTTPClientRequest(url: url)
        httpClientRequest.headers.add(name: "Accept", value: "application/json")
        httpClientRequest.headers.add(name: "Authorization", value: "Bearer \(DefaultStack.token)")
        self.httpClientRequest = httpClientRequest
        let sessionTransport = URLSessionTransport()
        let ahcTransport = AsyncHTTPClientTransport(client: httpClient)
        self.sessionTransport = sessionTransport
        self.ahcTransport = ahcTransport
        sessionCouriers = CourierConfiguration.allCases.map {
            Client(baseURL: URL(string: url)!, transport: sessionTransport, middleware: $0.middleware())
        }
        ahcCouriers = CourierConfiguration.allCases.map {
            Client(baseURL: URL(string: url)!, transport: ahcTransport, middleware: $0.middleware())
        }
        openAPI = OpenAPIClients(
            url: URL(string: url)!,
            httpClient: httpClient,
            configuration: URLSessionTransport.defaultConfiguration
        )
    }

    /// Starts an in-process server and makes the clients.
    public static func start() async throws -> LoopbackClients {
        let server = try await LoopbackServer.start()
        return LoopbackClients(url: server.url, server: server)
    }

    /// Makes the clients for a server that runs elsewhere (nginx).
    ///
    /// - Parameter url: The URL every call gets.
    public static func connecting(to url: String) -> LoopbackClients {
        LoopbackClients(url: url, server: nil)
    }

    /// Courier over ``ahcTransport`` in `configuration`.
    public func ahcCourier(_ configuration: CourierConfiguration) -> Client {
        ahcCouriers[configuration.rawValue]
    }

    /// The request a client in `configuration` is handed: ``unauthenticatedRequest`` when its middleware adds
    /// `Authorization`, ``request`` otherwise.
    public func request(for configuration: CourierConfiguration) -> URLRequest {
        configuration.authenticates ? unauthenticatedRequest : request
    }

    /// Gets the resource through Courier in `configuration` over one of the transports.
    ///
    /// - Parameters:
    ///   - configuration: Courier's middleware.
    ///   - transport: Which transport.
    /// - Returns: What `Client.send` returns.
    public func courierGet(
        _ configuration: CourierConfiguration,
        over transport: LoopbackTransport
    ) async throws -> (Data, HTTPURLResponse) {
        let client =
            switch transport {
            case .urlSession: sessionCouriers[configuration.rawValue]
            case .asyncHTTPClient: ahcCouriers[configuration.rawValue]
            }
        return try await client.send(request(for: configuration))
    }

    /// What a caller of AsyncHTTPClient writes to get a whole small response.
    public func asyncHTTPClientGet() async throws -> (HTTPClientResponse, ByteBuffer) {
        let response = try await httpClient.execute(httpClientRequest, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response, body)
    }

    /// What a caller of AsyncHTTPClient's EventLoopFuture API writes to get a whole small response: the same
    /// request through `execute(request:delegate:eventLoop:deadline:)` with its `ResponseAccumulator`, the event
    /// loop left to the pool (`indifferent`) or the delegate and the connection on one (`pinned`).
    public func asyncHTTPClientFutureGet(pinned: Bool) async throws -> HTTPClient.Response {
        var outgoing = try HTTPClient.Request(url: request.url!, method: .GET)
        outgoing.headers.add(name: "Accept", value: "application/json")
        outgoing.headers.add(name: "Authorization", value: "Bearer \(DefaultStack.token)")
        let task = httpClient.execute(
            request: outgoing,
            delegate: ResponseAccumulator(request: outgoing),
            eventLoop: pinned ? .delegateAndChannel(on: httpClient.eventLoopGroup.any()) : .indifferent,
            deadline: .now() + .seconds(30)
        )
        return try await task.futureResult.get()
    }

    /// What a caller of `URLSession` writes, with ``session``.
    public func sessionGet() async throws -> (Data, URLResponse) {
        try await session.data(for: request)
    }

    /// What a caller of `URLSession` writes to receive the body through a delegate, with ``delegateSession``.
    public func delegateSessionGet() async throws -> (Data, URLResponse) {
        try await collector.data(for: request, on: delegateSession)
    }

    /// Shuts the clients down, then the server (if it is in-process).
    public func shutdown() async throws {
        try await httpClient.shutdown()
        session.finishTasksAndInvalidate()
        defaultSession.finishTasksAndInvalidate()
        delegateSession.finishTasksAndInvalidate()
        openAPI.invalidate()
        try await server?.shutdown()
    }
}

/// The transports Courier is measured over end to end.
public enum LoopbackTransport: Sendable {
    /// `URLSessionTransport`.
    case urlSession
    /// `AsyncHTTPClientTransport`.
    case asyncHTTPClient
}
