#if AsyncHTTPClient
import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// A channel handler between SwiftNIO's HTTP/1.1 response decoder and AsyncHTTPClient's own handler that
/// refuses a response whose status is below 100 before AsyncHTTPClient sees it.
///
/// AsyncHTTPClient (through 1.37.0) skips every head whose status is below 200, but 101, as an informational
/// one and waits for the next, while SwiftNIO's decoder passes on the body of a head below 100 (`HTTP/1.1 000`
/// with a `Content-Length`): the body then reaches AsyncHTTPClient's request state machine before any head, and
/// its precondition stops the process. This handler drops such a head and everything after it on the
/// connection, fails the request with ``InvalidStatus`` (which the transport reports as
/// ``CourierError/Code/nonHTTPResponse``) and closes the connection.
///
/// ``AsyncHTTPClientTransport`` installs it on every HTTP/1.1 connection of a client it creates, and
/// ``AsyncHTTPClientTransport/defaultConfiguration`` on those of any client made from it, through
/// `HTTPClient.Configuration.http1_1ConnectionDebugInitializer` (called once AsyncHTTPClient has set up the
/// connection's pipeline, before the connection takes its first request).
final class ResponseStatusGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// A response's status line has a code below 100, which is no HTTP status.
    struct InvalidStatus: Error, CustomStringConvertible {
        /// The code the status line has.
        let code: UInt

        var description: String { "the response's status \(code) is not an HTTP status (100 to 999)" }
    }

    /// Whether a head was refused: the connection is closing, and nothing more of it is passed on.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let head) = unwrapInboundIn(data), head.status.code < 100 {
            refused = true
            context.fireErrorCaught(InvalidStatus(code: head.status.code))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Adds a guard to `channel`'s pipeline right after its HTTP/1.1 response decoder, unless it has one; leaves a
    /// pipeline without that decoder as it is.
    static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        guard channel.eventLoop.inEventLoop else {
            return channel.eventLoop.submit { try installNow(on: channel) }
        }
        return channel.eventLoop.makeCompletedFuture { try installNow(on: channel) }
    }

    private static func installNow(on channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        guard (try? pipeline.context(handlerType: ResponseStatusGuard.self)) == nil,
            let decoder = try? pipeline.context(handlerType: ByteToMessageHandler<HTTPResponseDecoder>.self)
        else { return }
        try pipeline.addHandler(ResponseStatusGuard(), position: .after(decoder.handler))
    }

    /// `configuration` with the guard installed on every HTTP/1.1 connection, before the configuration's own
    /// `http1_1ConnectionDebugInitializer`, if it has one.
    static func guarding(_ configuration: HTTPClient.Configuration) -> HTTPClient.Configuration {
        var configuration = configuration
        let initializer = configuration.http1_1ConnectionDebugInitializer
        configuration.http1_1ConnectionDebugInitializer = { channel in
            let installed = install(on: channel)
            guard let initializer else { return installed }
            return installed.flatMap { initializer(channel) }
        }
        return configuration
    }
}
#endif
