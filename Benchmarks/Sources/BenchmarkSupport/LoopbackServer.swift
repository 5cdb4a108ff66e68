public import NIOCore
public import NIOHTTP1
import NIOPosix

/// A minimal HTTP/1.1 keep-alive server on 127.0.0.1 that answers every request with the same small JSON
/// body and 12 header fields (``responseHeaders`` and `Content-Length`). Its cost is the same for every
/// client measured against it.
public final class LoopbackServer: Sendable {
    /// The port the server listens on (chosen by the system).
    public let port: Int

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.port = port
        self.group = group
        self.channel = channel
    }

    /// Starts a server on 127.0.0.1, on a port the system chooses, with one event-loop thread of its own.
    ///
    /// - Returns: The running server.
    /// - Throws: When the port cannot be bound.
    public static func start() async throws -> LoopbackServer {
        try await start { FixedResponseHandler() }
    }

    /// Starts a server like ``start()`` whose connections are answered by a handler `makeHandler` makes for each,
    /// after the HTTP/1.1 server pipeline.
    ///
    /// - Returns: The running server.
    /// - Throws: When the port cannot be bound.
    public static func start(
        handler makeHandler: @escaping @Sendable () -> any ChannelHandler
    ) async throws -> LoopbackServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(makeHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try await channel.close()
            try await group.shutdownGracefully()
            throw LoopbackServerError.noPort
        }
        return LoopbackServer(port: port, group: group, channel: channel)
    }

    /// The fields the server answers with besides `Content-Length`: 11 that a typical JSON API sends, as
    /// nginx sends them in the end-to-end benchmarks against it (`Benchmarks/Scripts/nginx.sh`). The values are
    /// fixed (`Date` and `X-Request-ID` do not change from one response to the next); what they cost a client
    /// to parse does not depend on that.
    public static let responseHeaders: HTTPHeaders = [
        "Server": "nginx/1.22.1",
        "Date": "Tue, 24 Nov 2026 08:00:00 GMT",
        "Content-Type": "application/json; charset=utf-8",
        "Cache-Control": "private, max-age=0, must-revalidate",
        "ETag": "\"5d8c72a5edda8d6a\"",
        "Vary": "Accept, Accept-Encoding, Authorization",
        "X-Request-ID": "d32e0749230230e0358d82ee1a672b4f",
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
        "X-RateLimit-Limit": "5000",
        "X-RateLimit-Remaining": "4987",
        "X-Content-Type-Options": "nosniff",
    ]

    /// The URL of the server's one resource.
    public var url: String { "http://127.0.0.1:\(port)/users/42" }

    /// Stops listening and shuts the event loop down.
    ///
    /// - Throws: When the channel or the event loop fails to close.
    public func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

/// Why the loopback fixtures could not be used.
public enum LoopbackServerError: Error {
    /// The server's channel has no local port.
    case noPort
    /// A benchmark ran without its setup having started the server.
    case notStarted
    /// The server answered the setup's first request with another status than 200, or without a body.
    case unexpectedResponse(status: UInt, bodyBytes: Int)
}

/// Answers each request, once it has been read completely, with `200 OK` and a fixed body; keeps the
/// connection open unless the client asked to close it. A request whose path starts with `/late` gets the head
/// at once and the body a millisecond later, as from an API whose body is not ready with its head.
private final class FixedResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var keepAlive = true
    private var lateBody = false
    private let body: ByteBuffer
    private let headers: HTTPHeaders

    init() {
        body = ByteBuffer(string: Fixtures.body)
        var headers = LoopbackServer.responseHeaders
        headers.add(name: "Content-Length", value: "\(Fixtures.body.utf8.count)")
        self.headers = headers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
            lateBody = head.uri.hasPrefix("/late")
        case .body:
            break
        case .end:
            var headers = self.headers
            if !keepAlive {
                headers.add(name: "Connection", value: "close")
            }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil
            )
            if lateBody {
                context.flush()
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .milliseconds(1)) {
                    let (handler, context) = bound.value
                    handler.finish(context)
                }
            } else {
                finish(context)
            }
        }
    }

    private func finish(_ context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if !keepAlive {
            context.close(promise: nil)
        }
    }
}
