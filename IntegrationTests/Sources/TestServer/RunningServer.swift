public import Foundation
import ServiceLifecycle

/// A test server listening on `127.0.0.1` at an ephemeral port.
///
/// Start one with ``TestServers/start(name:)``, or let ``TestServers/withServer(name:isolation:_:)``
/// and ``TestServers/withTwoOrigins(isolation:_:)`` start and stop them around a test. Call
/// ``shutdown()`` when done; it is safe to call more than once.
public final class RunningServer: Sendable {
    /// The name the server reports in ``EchoResponse/server``.
    public let name: String
    /// The port the server listens on.
    public let port: Int
    /// The server's origin, `http://127.0.0.1:PORT`, without a trailing slash.
    public let baseURL: URL

    let state: ServerState
    private let serviceGroup: ServiceGroup
    private let runTask: Task<Void, any Error>
    /// The server's place in ``ServerGate/shared``, left once it has stopped.
    private let place: ServerGate.Place

    /// How long ``shutdown()`` lets open requests finish before it cancels them. Released long polls and
    /// hangs answer at once; the period is long because under the thread sanitizer, with the fan-out tests
    /// running, writing those answers has taken more than 5 seconds.
    static let gracePeriod = Duration.seconds(30)

    init(
        name: String,
        port: Int,
        state: ServerState,
        serviceGroup: ServiceGroup,
        runTask: Task<Void, any Error>,
        place: ServerGate.Place
    ) {
        self.name = name
        self.port = port
        self.baseURL = URL(string: "http://127.0.0.1:\(port)")!
        self.state = state
        self.serviceGroup = serviceGroup
        self.runTask = runTask
        self.place = place
    }

    /// A URL on this server.
    ///
    /// Query values are percent-encoded with everything but RFC 3986's unreserved characters
    /// escaped, so a whole URL can travel as one value (`to=http://127.0.0.1:…/echo?a=1`).
    ///
    /// - Parameters:
    ///   - path: The path, starting with `/`, possibly with a query of its own.
    ///   - query: Names and values to append to the query, in order.
    /// - Returns: The URL.
    public func url(_ path: String, query: KeyValuePairs<String, String> = [:]) -> URL {
        var text = self.baseURL.absoluteString + path
        if !query.isEmpty {
            let pairs = query.map { "\(Self.escape($0.key))=\(Self.escape($0.value))" }
            text += (path.contains("?") ? "&" : "?") + pairs.joined(separator: "&")
        }
        return URL(string: text)!
    }

    /// The origin redirects to the other side go to (see ``TestServers/withTwoOrigins(isolation:_:)``),
    /// or `nil` when this server has no peer.
    public var peerURL: URL? {
        get async { await self.state.peer }
    }

    /// Makes `peer` the origin that `?peer=1`, `?alternate=1` and `/redirect-loop` redirect to.
    ///
    /// - Parameter peer: The other server, or `nil` to have none.
    public func setPeer(_ peer: RunningServer?) async {
        await self.state.setPeer(peer?.baseURL)
    }

    /// Stops the server.
    ///
    /// Hanging requests and long polls are released first (they answer 503 / 408), then the
    /// server shuts down gracefully; requests still open after a grace period are cancelled and
    /// their connections closed. Returns once the server has stopped listening.
    public func shutdown() async {
        await self.state.beginShutdown()
        await self.serviceGroup.triggerGracefulShutdown()
        let runTask = self.runTask
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = try? await runTask.value }
            group.addTask {
                try? await Task.sleep(for: Self.gracePeriod)
                if !Task.isCancelled { runTask.cancel() }
            }
            await group.next()
            group.cancelAll()
        }
        self.place.leave()
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? text
    }
}
