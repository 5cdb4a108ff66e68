import Foundation
import NIOCore
import NIOPosix
import TestServer

/// A raw TCP exchange with a test server, for what `URLSession` hides: repeated header lines on
/// the way out, and exactly which bytes arrive before the server closes the connection.
enum RawHTTP {
    /// What came back: the head as text and the bytes after it, up to the server's close.
    struct Reply {
        var head: String
        var body: [UInt8]

        /// The status line's code.
        var status: Int? {
            let statusLine = self.head.split(separator: "\r\n").first ?? ""
            let parts = statusLine.split(separator: " ")
            return parts.count > 1 ? Int(parts[1]) : nil
        }

        /// The first value of a header, by case-insensitive name.
        func header(_ name: String) -> String? {
            for line in self.head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// Sends `GET target` to `server` with `headers` (each line ending in CRLF) and, unless `keepAlive`,
    /// `Connection: close`, and reads until the server closes the connection.
    static func get(
        _ target: String,
        headers: String = "",
        keepAlive: Bool = false,
        from server: RunningServer
    ) async throws -> Reply {
        let connection = keepAlive ? "" : "Connection: close\r\n"
        return try await exchange(
            port: server.port,
            request: "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\(connection)\r\n"
        )
    }

    /// Sends `request` (a complete HTTP/1.1 message) to `127.0.0.1:port` and reads until the
    /// server closes the connection. Send `Connection: close` unless the server closes anyway.
    static func exchange(port: Int, request: String) async throws -> Reply {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let received = try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var received: [UInt8] = []
            for try await buffer in inbound {
                received.append(contentsOf: buffer.readableBytesView)
            }
            return received
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = received.firstRange(of: separator) else {
            return Reply(head: String(decoding: received, as: UTF8.self), body: [])
        }
        return Reply(
            head: String(decoding: received[..<end.lowerBound], as: UTF8.self),
            body: Array(received[end.upperBound...])
        )
    }
}
