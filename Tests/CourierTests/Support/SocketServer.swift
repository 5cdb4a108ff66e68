import CourierTesting
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for testing transports against real sockets,
/// without any package dependency.
///
/// A connection carries one request, which the server reads, asks the handler for a ``Reply`` and answers with
/// `Connection: close`, unless the reply is ``Reply/keepAlive(status:headers:body:)``: then the server reads
/// the connection's next request. Each connection runs on its own thread, so blocking calls are fine.
///
/// ```swift
/// let server = try SocketServer { request in
///     request.path == "/hello" ? .response(status: 200, body: Data("hi".utf8)) : .response(status: 404)
/// }
/// defer { server.shutdown() }
/// let (data, response) = try await transport.send(URLRequest(url: server.url("/hello")))
/// ```
final class SocketServer: Sendable {
    /// A request as the server read it.
    struct Request: Sendable {
        /// The method, for example `GET`.
        var method: String
        /// The request target, for example `/users?id=1`.
        var target: String
        /// The header fields in order.
        var headers: [Header]
        /// The body (after removing chunked framing).
        var body: Data

        /// The target's path, without query.
        var path: String {
            String(target.prefix { $0 != "?" })
        }

        /// The first value of a header, compared case-insensitively.
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// One header field.
    struct Header: Sendable, Equatable {
        var name: String
        var value: String
    }

    /// What the server does with a request.
    enum Reply: Sendable {
        /// A complete response; `Content-Length` and `Connection: close` are added.
        case response(status: Int, headers: [Header] = [], body: Data = Data())
        /// Sends the status line, exactly these headers and then `body`, and keeps the connection open
        /// until the client closes it (no `Content-Length` is added: announce one in `headers`, or leave the
        /// body delimited by the end of the connection).
        case stall(status: Int, headers: [Header] = [], body: Data = Data())
        /// Sends nothing and waits until the client closes the connection.
        case hang
        /// Writes these bytes as they are (an HTTP response or not) and closes the connection.
        case raw(Data)
        /// A complete response with `Content-Length`, after which the connection stays open for the next request.
        case keepAlive(status: Int, headers: [Header] = [], body: Data = Data())
        /// Closes the connection without an answer: what a client sees when the server closes an idle
        /// keep-alive connection just as the client sends its next request on it.
        case close
    }

    /// The port the server listens on.
    let port: Int

    /// Counts the requests the server has read completely.
    let arrivals = Arrivals()

    /// Counts the connections the client closed while the server was stalling or hanging on them.
    let closedByClient = Arrivals()

    /// Counts the connections the server accepted.
    let connectionsAccepted = Arrivals()

    private let listener: Int32
    private let handler: @Sendable (Request) -> Reply
    private let state = Locked(State())

    private struct State {
        var requests: [Request] = []
        var connections: Set<Int32> = []
        var isShutDown = false
    }

    /// Starts a server on 127.0.0.1 with an ephemeral port.
    ///
    /// - Parameter handler: Decides the reply for each request; it runs on the connection's thread.
    /// - Throws: ``SocketServerError`` when the socket cannot be set up.
    init(handler: @escaping @Sendable (Request) -> Reply) throws {
        self.handler = handler
        let (listener, port) = try Self.bindLoopbackSocket()
        guard listen(listener, 128) == 0 else {
            close(listener)
            throw SocketServerError(operation: "listen")
        }
        self.listener = listener
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    func url(_ path: String = "/") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// The origin, `http://127.0.0.1:PORT`.
    var origin: String { "http://127.0.0.1:\(port)" }

    /// Every request read so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting connections and closes the open ones.
    func shutdown() {
        // Wakes the threads blocked in accept and recv; each thread closes its own descriptor. The lock
        // keeps a descriptor from being closed (and its number reused) while it is being shut down.
        state.withLock { state in
            guard !state.isShutDown else { return }
            state.isShutDown = true
            Glue.shutdownSocket(listener)
            for connection in state.connections { Glue.shutdownSocket(connection) }
        }
    }

    // MARK: Connections

    /// A TCP socket bound to 127.0.0.1 on a port the system picks, and that port.
    static func bindLoopbackSocket() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, streamType, 0)
        guard descriptor >= 0 else { throw SocketServerError(operation: "socket") }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(descriptor)
            throw SocketServerError(operation: "bind")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else {
            close(descriptor)
            throw SocketServerError(operation: "getsockname")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static var streamType: Int32 {
        #if canImport(Glibc) || canImport(Musl)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                break
            }
            let accepted = state.withLock { state in
                guard !state.isShutDown else { return false }
                state.connections.insert(connection)
                return true
            }
            guard accepted else {
                close(connection)
                break
            }
            connectionsAccepted.arrive()
            Thread.detachNewThread { [self] in serve(connection) }
        }
        close(listener)
    }

    private func serve(_ connection: Int32) {
        defer {
            state.withLock { state in
                state.connections.remove(connection)
                close(connection)
            }
        }
        #if canImport(Darwin)
        var noSignal: Int32 = 1
        setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var reader = Reader(connection: connection)
        while let request = reader.readRequest() {
            state.withLock { $0.requests.append(request) }
            arrivals.arrive()
            guard answer(handler(request), on: connection, reader: &reader) else { return }
        }
    }

    /// Answers with `reply`.
    ///
    /// - Returns: Whether the connection stays open for the next request.
    private func answer(_ reply: Reply, on connection: Int32, reader: inout Reader) -> Bool {
        switch reply {
        case .response(let status, let headers, let body):
            var head = headers
            head.append(Header(name: "Content-Length", value: String(body.count)))
            head.append(Header(name: "Connection", value: "close"))
            _ = Glue.write(Self.head(status: status, headers: head) + body, to: connection)
        case .keepAlive(let status, let headers, let body):
            let head = headers + [Header(name: "Content-Length", value: String(body.count))]
            return Glue.write(Self.head(status: status, headers: head) + body, to: connection)
        case .stall(let status, let headers, let body):
            _ = Glue.write(Self.head(status: status, headers: headers) + body, to: connection)
            reader.waitForClose()
            closedByClient.arrive()
        case .hang:
            reader.waitForClose()
            closedByClient.arrive()
        case .raw(let bytes):
            _ = Glue.write(bytes, to: connection)
        case .close:
            break
        }
        return false
    }

    private static func head(status: Int, headers: [Header]) -> Data {
        var text = "HTTP/1.1 \(status) \(reason(for: status))\r\n"
        for header in headers {
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "\r\n"
        return Data(text.utf8)
    }

    private static func reason(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 407: "Proxy Authentication Required"
        default: "Status"
        }
    }
}

/// A port on 127.0.0.1 that is bound but not listening, so that connecting to it is refused at once.
final class RefusingPort: Sendable {
    /// The port.
    let port: Int
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try SocketServer.bindLoopbackSocket()
    }

    deinit {
        close(descriptor)
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    func url(_ path: String = "/") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }
}

/// A socket call failed while starting a ``SocketServer``.
struct SocketServerError: Error, CustomStringConvertible {
    let operation: String
    let code = errno

    var description: String { "\(operation) failed with errno \(code)" }
}

/// Reads one HTTP/1.1 request from a connection.
private struct Reader {
    let connection: Int32
    private var buffer = [UInt8]()

    init(connection: Int32) {
        self.connection = connection
    }

    /// Reads more bytes; `false` at end of stream or on error.
    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    private mutating func take(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard fill() else { return nil }
        }
        let taken = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return taken
    }

    private mutating func line() -> String? {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var bytes = Array(buffer[0..<end])
                buffer.removeFirst(end + 1)
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
                return String(decoding: bytes, as: UTF8.self)
            }
            guard fill() else { return nil }
        }
    }

    mutating func readRequest() -> SocketServer.Request? {
        guard let requestLine = line() else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        var headers: [SocketServer.Header] = []
        while let headerLine = line(), !headerLine.isEmpty {
            guard let colon = headerLine.firstIndex(of: ":") else { continue }
            let name = String(headerLine[..<colon])
            let value = headerLine[headerLine.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append(SocketServer.Header(name: name, value: value))
        }
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name }?.value
        }
        if header("expect")?.lowercased() == "100-continue" {
            _ = Glue.write(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8), to: connection)
        }
        var body = [UInt8]()
        if header("transfer-encoding")?.lowercased().contains("chunked") == true {
            // A body cut before its last chunk (the connection closed) is no request.
            var ended = false
            while let sizeLine = line(), let size = Int(sizeLine.prefix { $0 != ";" }, radix: 16) {
                if size == 0 {
                    while let trailer = line(), !trailer.isEmpty {}
                    ended = true
                    break
                }
                guard let chunk = take(size), line() != nil else { return nil }
                body += chunk
            }
            guard ended else { return nil }
        } else if let length = header("content-length").flatMap({ Int($0) }), length > 0 {
            guard let bytes = take(length) else { return nil }
            body = bytes
        }
        return SocketServer.Request(
            method: String(parts[0]),
            target: String(parts[1]),
            headers: headers,
            body: Data(body)
        )
    }

    /// Reads and discards until the peer closes the connection (or it is shut down).
    mutating func waitForClose() {
        while fill() {
            buffer.removeAll(keepingCapacity: true)
        }
    }
}

/// Small wrappers over socket calls that differ between platforms.
enum Glue {
    /// Writes all of `data`; `false` when the peer has gone.
    static func write(_ data: Data, to connection: Int32) -> Bool {
        #if canImport(Darwin)
        let flags: Int32 = 0
        #else
        let flags = Int32(MSG_NOSIGNAL)
        #endif
        return data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = send(connection, raw.baseAddress! + offset, raw.count - offset, flags)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    static func shutdownSocket(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
        #elseif canImport(Musl)
        _ = Musl.shutdown(descriptor, Int32(SHUT_RDWR))
        #else
        _ = Darwin.shutdown(descriptor, SHUT_RDWR)
        #endif
    }
}

extension SocketServer.Reply {
    /// A body that never ends: the head and 10 of the 1,000 bytes it announces, then nothing until the client
    /// closes the connection.
    static let drip = SocketServer.Reply.stall(
        status: 200,
        headers: [.init(name: "Content-Length", value: "1000")],
        body: Data(count: 10)
    )
}
