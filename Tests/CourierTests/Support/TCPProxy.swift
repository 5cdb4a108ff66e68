#if os(Linux)
import CourierTesting
import Foundation
import Glibc

/// A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL) that a test can take down and bring back, as if
/// the server stopped and restarted: taken down, it cuts every open connection and closes each new one at once.
final class TCPProxy: Sendable {
    /// The proxy's port.
    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    /// Whether the proxy is down, and the open connections' descriptors, by pair (client, upstream).
    private let state = Locked((down: false, pairs: [Int: (Int32, Int32)](), nextPair: 0, closed: false))
    private let forwarded = Locked(0)

    /// Bytes forwarded so far from clients to the server: what a client sent (a query, a ping), whole.
    var bytesToServer: Int { forwarded.withLock { $0 } }

    /// Starts a proxy to `upstreamPort` on 127.0.0.1.
    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let (listener, port) = try SocketServer.bindLoopbackSocket()
        guard listen(listener, 128) == 0 else {
            close(listener)
            throw SocketServerError(operation: "listen")
        }
        self.listener = listener
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Cuts every open connection; new ones are closed at once until ``bringUp()``.
    func takeDown() {
        state.withLock { state in
            state.down = true
            for (client, upstream) in state.pairs.values {
                Glue.shutdownSocket(client)
                Glue.shutdownSocket(upstream)
            }
        }
    }

    /// Forwards new connections again.
    func bringUp() {
        state.withLock { $0.down = false }
    }

    /// Stops accepting and cuts every connection.
    func shutdown() {
        state.withLock { state in
            state.closed = true
            Glue.shutdownSocket(listener)
            for (client, upstream) in state.pairs.values {
                Glue.shutdownSocket(client)
                Glue.shutdownSocket(upstream)
            }
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            guard !state.withLock({ $0.down || $0.closed }), let upstream = connectUpstream() else {
                close(client)
                continue
            }
            let pair = state.withLock { state in
                defer { state.nextPair += 1 }
                state.pairs[state.nextPair] = (client, upstream)
                return state.nextPair
            }
            // Each direction on a thread of its own; the second to end closes both descriptors.
            let ended = Locked(0)
            let end = { @Sendable [self] in
                Glue.shutdownSocket(client)
                Glue.shutdownSocket(upstream)
                let both = ended.withLock { count in
                    count += 1
                    return count == 2
                }
                guard both else { return }
                state.withLock { state in
                    state.pairs[pair] = nil
                    close(client)
                    close(upstream)
                }
            }
            Thread.detachNewThread { [forwarded] in
                Self.pump(from: client, to: upstream, counting: forwarded)
                end()
            }
            Thread.detachNewThread {
                Self.pump(from: upstream, to: client, counting: nil)
                end()
            }
        }
    }

    private func connectUpstream() -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(upstreamPort).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Copies bytes from `source` to `destination` until either ends, adding each count read to `counter`.
    private static func pump(from source: Int32, to destination: Int32, counting counter: Locked<Int>?) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            counter?.withLock { $0 += count }
            guard Glue.write(Data(buffer[0..<count]), to: destination) else { return }
        }
    }
}
#endif
