import BenchmarkSupport
import NIOCore
import NIOHTTP1
import Synchronization

/// The loopback server answering `GET /bytes/N` with N bytes (a `Content-Length` body), generated as they are
/// written: one shared 64 KiB buffer, written again and again while the socket takes it. Its cost is the same for
/// every client measured against it.
enum StreamingServer {
    static func start() async throws -> LoopbackServer {
        try await LoopbackServer.start { BytesHandler() }
    }

    /// How many connections the server has accepted so far.
    static var connectionsAccepted: Int { BytesHandler.connections.load(ordering: .relaxed) }
}

extension LoopbackServer {
    func url(bytes: Int) -> String { "http://127.0.0.1:\(port)/bytes/\(bytes)" }
}

/// Writes the body while the channel is writable, and goes on when it becomes writable again.
private final class BytesHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let chunk = ByteBuffer(repeating: 0x61, count: 64 * 1024)
    static let connections = Atomic<Int>(0)
    private var requested = 0
    private var typicalHead = false
    private var left = 0
    private var writing = false
    private var inWriteMore = false

    func channelActive(context: ChannelHandlerContext) {
        Self.connections.add(1, ordering: .relaxed)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requested = head.uri.split(separator: "/").last.flatMap { Int($0) } ?? 0
            typicalHead = head.uri.hasPrefix("/typical-head/")
        case .body:
            break
        case .end:
            var headers: HTTPHeaders = ["Content-Length": "\(requested)", "Content-Type": "application/octet-stream"]
            if typicalHead {
                // The fields of a typical API response: 8 with the two above.
                headers.replaceOrAdd(name: "Content-Type", value: "application/json; charset=utf-8")
                headers.add(name: "Date", value: "Mon, 24 Nov 2026 06:00:00 GMT")
                headers.add(name: "Server", value: "nginx/1.25.3")
                headers.add(name: "ETag", value: "\"33a64df551425fcc55e4d42a148795d9f25f89d4\"")
                headers.add(name: "Cache-Control", value: "max-age=60")
                headers.add(name: "X-Request-Id", value: "9f1c2a7e-4b1d-4c55-8a3f-6f2b1c0e9d11")
                headers.add(name: "Vary", value: "Accept-Encoding")
            }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil
            )
            left = requested
            writing = true
            writeMore(context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if writing && context.channel.isWritable { writeMore(context: context) }
    }

    private func writeMore(context: ChannelHandlerContext) {
        // A flush can make the channel writable again and call back in here: the outer call goes on instead.
        guard !inWriteMore else { return }
        inWriteMore = true
        defer { inWriteMore = false }
        while left > 0 && context.channel.isWritable {
            let length = min(left, Self.chunk.readableBytes)
            left -= length
            context.write(
                wrapOutboundOut(.body(.byteBuffer(Self.chunk.getSlice(at: 0, length: length)!))),
                promise: nil
            )
            if left > 0 { context.flush() }
        }
        if left == 0 && writing {
            writing = false
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
