import CourierTesting
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for transport tests, built on POSIX sockets so that the root
/// package needs no dependency.
///
/// It listens on a port the system picks, accepts on a background thread, serves each connection on a
/// thread of its own, and answers every request with whatever the test's handler returns. It reads one
/// request per connection and closes the connection after answering (`Connection: close`).
///
/// ```swift
/// let server = try LoopbackServer { request in .response(status: 200, body: Data("hi".utf8)) }
/// defer { server.stop() }
/// let url = server.url("/hello")
/// ```
final class LoopbackServer: Sendable {
    /// What the server does with one request.
    enum Reply: Sendable {
        /// Answer with this status, headers and body (`Content-Length` and `Connection: close` are added).
        case response(status: Int, headers: [Header] = [], body: Data = Data())
        /// Never answer; wait until the client closes the connection and count it in
        /// ``LoopbackServer/closedUnanswered``.
        case hang
        /// Write these bytes as they are, then close the connection.
        case raw(Data)
    }

    /// A header field, in order.
    struct Header: Sendable {
        let name: String
        let value: String

        init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A request as the server read it off the wire.
    struct ReceivedRequest: Sendable {
        /// The method, for example `GET`.
        let method: String
        /// The request target, for example `/users?page=2`.
        let target: String
        /// The header fields in the order received.
        let headers: [Header]
        /// The body (read according to `Content-Length`).
        let body: Data

        /// The first value of the header `name` (case-insensitive).
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    enum ServerError: Error {
        case socket(String, errno: Int32)
    }

    /// The port the server listens on.
    let port: Int
    /// Every request received, in order.
    var requests: [ReceivedRequest] { received.value }
    /// Counts requests as they arrive; `await server.requestArrivals.wait(for: 1)`.
    let requestArrivals = Arrivals()
    /// Counts connections the client closed while the server was holding a ``Reply/hang`` request.
    let closedUnanswered = Arrivals()

    private let listener: Int32
    private let handler: @Sendable (ReceivedRequest) -> Reply
    private let received = Locked<[ReceivedRequest]>([])
    /// The client sockets still open, and whether the server is stopping; `stop()` shuts them down under
    /// this lock, and a connection thread removes its socket under it before closing it.
    private let connections = Locked<(open: Set<Int32>, stopped: Bool)>(([], false))

    /// Starts a server that answers with `handler`.
    ///
    /// - Parameter handler: Chooses the reply for each request; it runs on a connection's thread.
    /// - Throws: ``ServerError`` when the socket cannot be set up.
    init(_ handler: @escaping @Sendable (ReceivedRequest) -> Reply) throws {
        self.handler = handler
        let (listener, port) = try Self.openListeningSocket()
        self.listener = listener
        self.port = port
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "LoopbackServer.accept"
        thread.start()
    }

    /// An absolute URL on this server.
    func url(_ pathAndQuery: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(pathAndQuery)")!
    }

    /// Stops accepting and closes every connection still open. Calling it twice does nothing.
    func stop() {
        let alreadyStopped = connections.withLock { state in
            defer { state.stopped = true }
            guard !state.stopped else { return true }
            for socket in state.open { _ = shutdown(socket, Int32(SHUT_RDWR)) }
            return false
        }
        guard !alreadyStopped else { return }
        // Wakes the accept thread, which then closes the listening socket itself.
        _ = shutdown(listener, Int32(SHUT_RDWR))
    }

    // MARK: Sockets

    private static func openListeningSocket() throws -> (Int32, Int) {
        let listener = socket(AF_INET, Int32(socketStreamType), 0)
        guard listener >= 0 else { throw ServerError.socket("socket", errno: errno) }
        var reuse: Int32 = 1
        _ = setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            let code = errno
            close(listener)
            throw ServerError.socket("bind/listen", errno: code)
        }
        return (listener, try boundPort(of: listener))
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            let accepted = connections.withLock { state in
                guard !state.stopped else { return false }
                state.open.insert(client)
                return true
            }
            guard accepted else {
                close(client)
                break
            }
            let thread = Thread { [self] in serve(client) }
            thread.name = "LoopbackServer.connection"
            thread.start()
        }
        close(listener)
    }

    private func serve(_ client: Int32) {
        defer {
            connections.withLock { state in
                state.open.remove(client)
                close(client)
            }
        }
        guard let request = Self.readRequest(from: client) else { return }
        received.withLock { $0.append(request) }
        requestArrivals.arrive()
        switch handler(request) {
        case .response(let status, let headers, let body):
            var head = "HTTP/1.1 \(status) \(Self.reason(for: status))\r\n"
            for header in headers { head += "\(header.name): \(header.value)\r\n" }
            head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            Self.write(Data(head.utf8) + body, to: client)
        case .hang:
            // Read until the peer closes: that is how the test sees a cancelled client task.
            var buffer = [UInt8](repeating: 0, count: 1024)
            while recv(client, &buffer, buffer.count, 0) > 0 {}
            closedUnanswered.arrive()
        case .raw(let bytes):
            Self.write(bytes, to: client)
        }
    }

    private static func readRequest(from client: Int32) -> ReceivedRequest? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            bytes.append(contentsOf: buffer[0..<count])
            headEnd = firstRange(of: separator, in: bytes)
        }
        guard let headEnd else { return nil }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", maxSplits: 2).map(String.init)
        guard requestLine.count >= 2 else { return nil }
        let headers = lines.compactMap { line -> Header? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            return Header(String(line[..<colon]), value)
        }
        var body = Array(bytes[(headEnd + separator.count)...])
        let length =
            headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while body.count < length {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            body.append(contentsOf: buffer[0..<count])
        }
        return ReceivedRequest(method: requestLine[0], target: requestLine[1], headers: headers, body: Data(body))
    }

    private static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    private static func write(_ data: Data, to client: Int32) {
        let bytes = [UInt8](data)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, sendFlags) }
            guard written > 0 else { return }
            offset += written
        }
    }

    private static func reason(for status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 302: return "Found"
        case 404: return "Not Found"
        case 500: return "Internal Server Error"
        default: return "Status"
        }
    }
}

/// A port on 127.0.0.1 that is bound but not listening, so that connecting to it is refused at once.
final class RefusingPort: Sendable {
    /// The port.
    let port: Int
    private let socketDescriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(socketStreamType), 0)
        guard descriptor >= 0 else { throw LoopbackServer.ServerError.socket("socket", errno: errno) }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw LoopbackServer.ServerError.socket("bind", errno: code)
        }
        socketDescriptor = descriptor
        port = try boundPort(of: descriptor)
    }

    deinit {
        close(socketDescriptor)
    }

    /// An absolute URL on this port.
    func url(_ pathAndQuery: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(pathAndQuery)")!
    }
}

// MARK: - Platform details

#if canImport(Glibc) || canImport(Musl)
private let socketStreamType = Int32(SOCK_STREAM.rawValue)
private let sendFlags = Int32(MSG_NOSIGNAL)
#else
private let socketStreamType = SOCK_STREAM
private let sendFlags: Int32 = 0
#endif

private func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    #if canImport(Darwin)
    address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    #endif
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}

private func boundPort(of socket: Int32) throws -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard result == 0 else { throw LoopbackServer.ServerError.socket("getsockname", errno: errno) }
    return Int(UInt16(bigEndian: address.sin_port))
}
