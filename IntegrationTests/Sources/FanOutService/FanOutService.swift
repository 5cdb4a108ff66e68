public import Courier
public import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
public import ServiceLifecycle

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small server-side example: a Hummingbird service that answers each request by fanning out to an
/// upstream API through one shared Courier ``Client``.
///
/// The client is what a service in production would build once at start-up:
///
/// ```swift
/// Client(
///     baseURL: upstream,
///     transport: transport,                       // AsyncHTTPClientTransport in a server
///     middleware: [
///         .counting(counter),                     // in-flight upstream calls, for graceful shutdown
///         .timeout(callTimeout),                  // the whole upstream call, retries included (10 s)
///         .retry(…),                              // 4 attempts for 5xx and per-attempt timeouts
///         .authenticating(with: refresher),       // bearer token, refreshed once on a 401
///         .timeout(attemptTimeout),               // each attempt (1 s)
///         .validatingStatus(),
///     ]
/// )
/// ```
///
/// ## Endpoint
///
/// `GET /fan-out/:id?parts=N&failures=F&hangs=H` sends `N` (default 3, at most 16) upstream calls at
/// once, all with the service's token:
/// - part 0: `GET /auth/:realm/protected` (the token must be current);
/// - parts 1…: `GET /flaky/<id>-<part>?failures=F` (the first `F` attempts answer 503);
/// - with `hangs=1`, one more part `GET /hang` that never answers.
///
/// Its answers, and the only ones it gives:
/// - `200` with a ``FanOutReply`` when every part succeeded (after retries);
/// - `502` with a ``FanOutFailure`` (`reason: "upstream"`) when a part still failed after 4 attempts;
/// - `504` with a ``FanOutFailure`` (`reason: "timeout"`) when a part did not answer in time;
/// - `503` with a ``FanOutFailure`` (`reason: "unauthorized"`) when the token could not be refreshed.
///
/// Cancelling (the caller closing its connection) cancels the upstream calls.
public struct FanOutService: Sendable {
    /// The client that calls the upstream API.
    public let client: Client
    /// Counts the upstream calls in flight; back at zero once every incoming request has been answered.
    public let counter: RequestCounter
    /// Holds the upstream token and refreshes it.
    public let refresher: TokenRefresher

    private let realm: String

    /// Creates the service and its upstream client.
    ///
    /// - Parameters:
    ///   - upstream: The upstream API's origin.
    ///   - realm: The upstream's auth realm (`/auth/:realm/…`).
    ///   - transport: What sends the upstream calls.
    ///   - callTimeout: How long one upstream call may take, retries included.
    ///   - attemptTimeout: How long one upstream attempt may take.
    public init(
        upstream: URL,
        realm: String,
        transport: any Transport,
        callTimeout: Duration = .seconds(10),
        attemptTimeout: Duration = .seconds(1)
    ) {
        let counter = RequestCounter()
        let tokenClient = Client(
            baseURL: upstream,
            transport: transport,
            middleware: [.validatingStatus()]
        )
        let refresher = TokenRefresher(token: .init("not-issued-yet")) { _ in
            let reply: TokenReply = try await tokenClient.send(.post("/auth/\(realm)/token"))
            return .init(reply.token, expiresIn: .seconds(reply.expiresIn))
        }
        let retry = RetryPolicy(
            maximumAttempts: 4,
            backoff: .exponential(base: .milliseconds(20)),
            budget: nil
        )
        self.client = Client(
            baseURL: upstream,
            transport: transport,
            middleware: [
                .counting(counter),
                .timeout(callTimeout),
                .retry(retry),
                .authenticating(with: refresher),
                .timeout(attemptTimeout),
                .validatingStatus(),
            ]
        )
        self.counter = counter
        self.refresher = refresher
        self.realm = realm
    }

    /// What the service runs beside its server: the upstream client, a ServiceLifecycle `Service` (Courier's
    /// trait `ServiceLifecycle`). Listed before the server in a `ServiceGroup`, so that a graceful shutdown
    /// (SIGTERM) first stops the server, which answers the requests it has, and then drains the upstream
    /// calls still in flight:
    ///
    /// ```swift
    /// let app = Application(router: service.makeRouter())
    /// let group = ServiceGroup(services: service.services + [app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public var services: [any Service] { [client] }

    /// The service's router, with the `/fan-out/:id` route; the tests run it with
    /// `TestServers.withServer(name:router:services:isolation:_:)` and ``services``, like any Hummingbird router.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("fan-out/:id") { request, context in
            try await self.fanOut(request, context: context)
        }
        return router
    }

    private func fanOut(
        _ request: Hummingbird.Request,
        context: BasicRequestContext
    ) async throws
        -> Response
    {
        let id = context.parameters.get("id") ?? "unnamed"
        let query = request.uri.queryParameters
        let parts = min(max(Int(query.get("parts") ?? "") ?? 3, 1), 16)
        let failures = max(Int(query.get("failures") ?? "") ?? 0, 0)
        let hangs = query.get("hangs") == "1"

        var requests = [Courier.Request<Data>.get("/auth/\(realm)/protected")]
        for part in 1..<parts {
            requests.append(.get("/flaky/\(id)-\(part)", query: ["failures": .init(failures)]))
        }
        if hangs {
            requests.append(.get("/hang"))
        }
        let results = await client.sendAll(requests, maxConcurrency: requests.count)

        var bytes = 0
        for result in results {
            switch result {
            case .success(let data):
                bytes += data.count
            case .failure(let error):
                return try Self.failure(for: error)
            }
        }
        return try Self.json(FanOutReply(id: id, parts: results.count, bytes: bytes), status: .ok)
    }

    private static func failure(for error: any Error) throws -> Response {
        if error is CancellationError { throw error }
        guard let error = error as? CourierError else {
            return try json(
                FanOutFailure(reason: "upstream", code: "\(type(of: error))"),
                status: .badGateway
            )
        }
        switch error.code {
        case .timedOut:
            return try json(
                FanOutFailure(reason: "timeout", code: error.code.description),
                status: .gatewayTimeout
            )
        case .refreshFailed, .tooManyRefreshes, .authenticationRejected:
            return try json(
                FanOutFailure(reason: "unauthorized", code: error.code.description),
                status: .serviceUnavailable
            )
        default:
            return try json(
                FanOutFailure(reason: "upstream", code: error.code.description),
                status: .badGateway
            )
        }
    }

    private static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        let data = try JSONEncoder().encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

/// What `/fan-out/:id` answers when every part succeeded.
public struct FanOutReply: Codable, Sendable, Equatable {
    /// The id from the path.
    public var id: String
    /// How many upstream calls were made (retries not counted).
    public var parts: Int
    /// The total size of the upstream bodies.
    public var bytes: Int
}

/// What `/fan-out/:id` answers when a part failed.
public struct FanOutFailure: Codable, Sendable, Equatable {
    /// `upstream`, `timeout` or `unauthorized`.
    public var reason: String
    /// The Courier error code (or error type) behind it.
    public var code: String
}

/// The upstream's token reply.
private struct TokenReply: Decodable, Sendable {
    var token: String
    var expiresIn: Int
}
