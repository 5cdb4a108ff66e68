#if AsyncHTTPClient
public import AsyncHTTPClient
public import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A ``Transport`` that sends requests with AsyncHTTPClient (swift-server/async-http-client), the HTTP
/// client most server-side Swift runs on. Available with the package trait `AsyncHTTPClient`.
///
/// ```swift
/// // Package.swift: .package(url: "…/courier", from: "1.0.0", traits: ["AsyncHTTPClient"])
/// let transport = AsyncHTTPClientTransport()                 // owns an HTTPClient
/// let client = Client(baseURL: baseURL, transport: transport)
/// // … at shutdown:
/// try await transport.shutdown()
/// ```
///
/// Or share the `HTTPClient` your service already has (you keep shutting it down yourself):
///
/// ```swift
/// let transport = AsyncHTTPClientTransport(client: httpClient)
/// ```
///
/// - **Owning or borrowing**: ``init(configuration:maximumResponseSize:)`` creates an `HTTPClient` that the
///   transport owns: call ``shutdown()`` when you are done with it. (If the transport is released without
///   it, the client is shut down in the background; awaiting ``shutdown()`` is what lets you know that its
///   connections are closed.) ``init(client:maximumResponseSize:)`` borrows your client: ``shutdown()``
///   does nothing then, and shutting the client down is yours to do.
/// - **Redirects are not followed**: an owned client is created with `redirectConfiguration: .disallow`,
///   whatever the configuration says. A borrowed client follows redirects if its configuration says so
///   (`HTTPClient.shared` does): create it with `redirectConfiguration: .disallow` and follow redirects with
///   ``Middleware/followingRedirects(max:sensitiveHeaders:allowsInsecureRedirects:)``, which strips
///   credentials per origin.
/// - **Response size**: a body larger than ``maximumResponseSize`` (10 MiB by default) fails with
///   ``CourierError/Code/bodyTooLarge``, as soon as the `Content-Length` says so, or else as soon as the
///   bytes received pass the limit; the request is then cancelled and no more than the limit is held.
/// - **Cancellation**: cancelling the calling task cancels the request (AsyncHTTPClient closes the
///   connection); the call throws `CancellationError`.
/// - **Connecting**: an owned client made from ``defaultConfiguration`` reports a connection that cannot be
///   made at once (a refused connection fails in a few milliseconds, as with `URLSession`) instead of letting
///   AsyncHTTPClient's pool try again until its connect timeout, and waits at most 10 seconds (the connect
///   timeout) for a host that does not answer. Whether to try again is the retry middleware's decision. A
///   configuration of your own, or a borrowed client, keeps its `connectionPool.retryConnectionEstablishment`
///   (AsyncHTTPClient's default, `true`, retries a refused connection until the connect timeout).
/// - **Deadlines**: under a call's ``Deadline`` (set by the timeout middleware, or by you with
///   `Deadline.$current.withValue`), the request is given to AsyncHTTPClient with that deadline, so that
///   connecting and waiting for a pooled connection and for the response head never go past it; a deadline
///   that has passed fails the request before it is sent. Either fails with ``CourierError/Code/timedOut``
///   and ``CourierError/timeout`` set, as the timeout middleware reports it. Only a deadline on a real-time
///   clock (`ContinuousClock`, `SuspendingClock`) is handed over; one on a test's manual clock is virtual,
///   and only the timeout middleware that set it enforces it.
///   The body's wait is bounded by the deadline too: the read is cancelled when it passes (by the timeout
///   middleware's shared timer under its deadline, by a timer of the read's own under a deadline you set), and
///   the call fails with ``CourierError/Code/timedOut``. Without a deadline, the transport passes
///   `NIODeadline.distantFuture`. `URLRequest.timeoutInterval` is ignored.
/// - **Errors**: a failed socket call is a ``CourierError/Code/transport`` error that says what happened
///   (`cannot connect to 127.0.0.1:8080 (connection refused)`), with the socket's `POSIXError` as
///   ``CourierError/underlying``, so ``RetryPolicy/isTransient(_:)`` treats a refused, reset or timed-out
///   connection as transient. Other AsyncHTTPClient errors are thrown as they are, and the client wraps them.
/// - **Bodies**: `httpBody` is sent as it is; a body Courier streams (``RequestBody/file(_:contentType:)``,
///   `.stream`, `.multipart`) is streamed from its source with backpressure, and with a `Content-Length` when
///   its length is known; any other `httpBodyStream` is read whole before sending.
/// - **Compressed responses**: an owned client made from ``defaultConfiguration`` decompresses gzip and deflate
///   responses, as `URLSession` does: AsyncHTTPClient sends `Accept-Encoding: deflate, gzip` unless the request
///   has an `Accept-Encoding` of its own, and the body you get is the decompressed one (the response's
///   `Content-Encoding` and `Content-Length` headers stay as the server sent them). Against a zip bomb, a body
///   that inflates to more than ``defaultDecompressionRatio`` (100) times the compressed bytes received fails
///   the call (a ``CourierError/Code/transport`` error with AsyncHTTPClient's decompression error underneath),
///   and the decompressed bytes count against ``maximumResponseSize``. A configuration of your own, or a
///   borrowed client, decompresses only if its `decompression` says so (AsyncHTTPClient's default is
///   `.disabled`).
/// - **Malformed responses**: a head that is not valid HTTP/1.1 fails with ``CourierError/Code/nonHTTPResponse``,
///   as with ``URLSessionTransport``: a field value with a control character (RFC 9110 §5.5), `Content-Length`
///   together with `Transfer-Encoding` (RFC 9112 §6.3), both refused by SwiftNIO's parser, and more than 1,000
///   header fields (refused before they are converted; converting a head is linear in its size).
/// - **A status below 100**: AsyncHTTPClient (through 1.37.0) skips every head below 200 as informational while
///   SwiftNIO passes on the body of one below 100, and a precondition of its request state machine
///   (`HTTPRequestStateMachine.receivedHTTPResponseBodyPart`, "How can we receive a response body, if we haven't
///   received a head") then stops the process: `HTTP/1.1 000 Zero` with a body is enough. An owned client, and
///   any client made from ``defaultConfiguration``, has a guard in the pipeline of each HTTP/1.1 connection (set
///   through `http1_1ConnectionDebugInitializer`, before your own initializer if the configuration has one) that
///   fails such a response with ``CourierError/Code/nonHTTPResponse`` first. A borrowed client made from another
///   configuration, and HTTP/2 connections, have no guard: make a borrowed client from ``defaultConfiguration``.
/// - **A connection closed while idle**: when a pooled connection turns out to have been closed by the server
///   (it closed it while idle, just as the request went out: `I/O on closed channel`, or closed or reset without
///   an answer), a request whose method is idempotent (`GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`, `DELETE`) or
///   that has an `Idempotency-Key`, and whose body can be sent again, is sent once more on another connection,
///   as libcurl does under `URLSession`. Any other request (a `POST` without a key) is never sent twice: it
///   fails with a ``CourierError/Code/transport`` error (`the connection to … was closed before the response
///   arrived`) that ``RetryPolicy/isTransient(_:)`` treats as transient, so that the retry middleware decides,
///   by its own idempotency rules.
public final class AsyncHTTPClientTransport: Transport {
    /// The response size limit used when none is given: 10 MiB, as ``URLSessionTransport``'s.
    public static let defaultMaximumResponseSize = URLSessionTransport.defaultMaximumResponseSize

    /// How many times its compressed size a response body may inflate to under ``defaultConfiguration``: 100.
    /// Text and JSON compress 3 to 20 times; a zip bomb, about 1,000 times.
    public static let defaultDecompressionRatio = 100

    /// The configuration of an owned client when none is given: AsyncHTTPClient's defaults, with redirects
    /// disallowed, a failed connection reported at once, and gzip and deflate responses decompressed.
    ///
    /// `connectionPool.retryConnectionEstablishment` is `false`: when a connection cannot be made (refused,
    /// unreachable), the requests waiting for it fail at once, as with `URLSession`, instead of waiting while
    /// the pool tries again until the connect timeout (10 seconds); whether to try again is the
    /// ``Middleware/retry(_:clock:)`` middleware's decision. The connect timeout stays AsyncHTTPClient's
    /// 10 seconds, for a host that does not answer at all.
    ///
    /// `decompression` is `.enabled(limit: .ratio(defaultDecompressionRatio))`: responses with
    /// `Content-Encoding: gzip` or `deflate` are decompressed, and one that inflates more than 100 times its
    /// compressed size fails.
    ///
    /// `http1_1ConnectionDebugInitializer` installs a guard in each HTTP/1.1 connection that fails a response
    /// whose status is below 100 before AsyncHTTPClient sees it (which would otherwise stop the process, see
    /// "A status below 100" above); keep it when you change the configuration, or borrow a client made from it.
    public static var defaultConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .enabled(limit: .ratio(defaultDecompressionRatio))
        return ResponseStatusGuard.guarding(configuration)
    }

    /// The client requests are sent with.
    public let client: HTTPClient

    /// The largest response body, in bytes, that the transport accepts from ``send(_:)``; a streamed body may
    /// be of any length (see ``stream(_:)``).
    public let maximumResponseSize: Int

    /// Whether the transport created ``client`` and shuts it down.
    public let ownsClient: Bool

    /// Creates a transport that owns a new `HTTPClient` on the shared event loop group
    /// (`HTTPClient.defaultEventLoopGroup`). Call ``shutdown()`` when you are done with it.
    ///
    /// - Parameters:
    ///   - configuration: The client's configuration; its `redirectConfiguration` is replaced by
    ///     `.disallow`, and the guard against a status below 100 runs before its
    ///     `http1_1ConnectionDebugInitializer`. ``defaultConfiguration`` by default.
    ///   - maximumResponseSize: The largest response body accepted, in bytes;
    ///     ``defaultMaximumResponseSize`` (10 MiB) by default.
    public convenience init(
        configuration: HTTPClient.Configuration = AsyncHTTPClientTransport.defaultConfiguration,
        maximumResponseSize: Int = AsyncHTTPClientTransport.defaultMaximumResponseSize
    ) {
        var configuration = ResponseStatusGuard.guarding(configuration)
        configuration.redirectConfiguration = .disallow
        self.init(
            client: HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration),
            maximumResponseSize: maximumResponseSize,
            ownsClient: true
        )
    }

    /// Creates a transport that sends with your `HTTPClient`, which you keep and shut down yourself.
    ///
    /// Give it a client created with `redirectConfiguration: .disallow`: a client that follows redirects
    /// does so before Courier's middleware can strip credentials.
    ///
    /// - Parameters:
    ///   - client: The client.
    ///   - maximumResponseSize: The largest response body accepted, in bytes;
    ///     ``defaultMaximumResponseSize`` (10 MiB) by default.
    public convenience init(
        client: HTTPClient,
        maximumResponseSize: Int = AsyncHTTPClientTransport.defaultMaximumResponseSize
    ) {
        self.init(client: client, maximumResponseSize: maximumResponseSize, ownsClient: false)
    }

    private init(client: HTTPClient, maximumResponseSize: Int, ownsClient: Bool) {
        precondition(maximumResponseSize >= 0, "maximumResponseSize must not be negative")
        self.client = client
        self.maximumResponseSize = maximumResponseSize
        self.ownsClient = ownsClient
    }

    deinit {
        if ownsClient {
            // Without this, AsyncHTTPClient traps in debug builds when the client is released running.
            // Shutting down an already shut-down client reports an error, which is of no interest here.
            client.shutdown { _ in }
        }
    }

    /// Shuts the owned client down, waiting until its connections are closed; does nothing for a borrowed
    /// client. Requests sent afterwards fail with ``CourierError/Code/clientShutDown``.
    ///
    /// - Throws: AsyncHTTPClient's error if the client cannot shut down cleanly, or if it was shut down
    ///   already.
    public func shutdown() async throws {
        guard ownsClient else { return }
        try await client.shutdown()
    }

    /// Sends the request with the client and collects the response body.
    ///
    /// - Returns: The body and the HTTP response, whatever its status (a 3xx included).
    /// - Throws: `CancellationError` when the task is cancelled, ``CourierError/Code/invalidRequest`` for a
    ///   request that cannot be sent safely (see ``RequestValidation``), ``CourierError/Code/bodyTooLarge``,
    ///   ``CourierError/Code/clientShutDown`` after ``shutdown()``, ``CourierError/Code/timedOut`` when the
    ///   call's ``Deadline`` passes, ``CourierError/Code/transport`` for a failed socket call, or
    ///   AsyncHTTPClient's error.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (response, deadline) = try await execute(request)
        // A logging or timing layer above learns how long the body took after the head (see `CallSummary`).
        let record = CallRecord.current
        let headArrived = record?.now()
        defer { record?.addWaitForBody(since: headArrived) }
        do {
            return try await collect(response, for: request, by: deadline)
        } catch let error as CourierError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.translate(error, request: request, deadline: deadline, duringBody: true)
        }
    }

    /// Sends the request with the client and returns as soon as the response head arrives, with the body
    /// streaming.
    ///
    /// The body streams through AsyncHTTPClient's delegate API: its event loop hands each chunk to the body's
    /// reader, with no task in between.
    ///
    /// - **Backpressure**: the body is read from the connection only as fast as its reader takes it (about
    ///   1 MiB ahead, plus AsyncHTTPClient's own small buffer): while the reader is behind, AsyncHTTPClient
    ///   stops reading from the socket. So a slow reader keeps memory bounded and a body of any length
    ///   streams: ``maximumResponseSize`` applies to ``send(_:)`` only. A chunk of 16 KiB or more is usually
    ///   not copied: it shares AsyncHTTPClient's buffer, holding at most twice its size.
    /// - **Deadlines**: a call's ``Deadline`` bounds connecting and the wait for the head, as for
    ///   ``send(_:)``, and fails it with ``CourierError/Code/timedOut``; it does not bound the body, whose time
    ///   the client's idle and total timeouts bound.
    /// - **Stopping**: when the body's reader stops (leaves its loop, is cancelled, drops the body, or the
    ///   body is stopped from another task: ``StreamedBody/cancel()``, an idle timeout, a shutdown), the
    ///   request is cancelled and the connection closed, even while AsyncHTTPClient waits for the reader.
    ///   Cancelling the caller while it waits for the head cancels the request and throws
    ///   `CancellationError`. A connection lost mid-body is thrown by the body's loop as
    ///   ``CourierError/Code/transport``.
    ///
    /// - Throws: What ``send(_:)`` throws while waiting for the head.
    public func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        // AsyncHTTPClient's delegate API: its event loop writes each body part into the body's pipe, and the
        // pipe's reader stops the request from whatever task it is stopped in.
        try await streamThroughDelegate(request)
    }

    /// What the loop over a streamed body throws when the body fails: the error translated as for the head (a
    /// socket error says what happened); one that says nothing of the connection (the parser's "stream ended at
    /// an unexpected time", AsyncHTTPClient's `remoteConnectionClosed`) as a ``CourierError/Code/transport``
    /// error that the connection was lost, with it underneath.
    static func bodyFailure(_ error: any Error, request: URLRequest) -> any Error {
        let translated = translate(error, request: request, deadline: nil, duringBody: true)
        if translated is CourierError || translated is CancellationError { return translated }
        return TransportFailure.lostDuringBody(error, request: request)
    }

    /// A chunk of at least this many bytes that fills at least half its buffer's storage becomes `Data` that
    /// shares the storage; others are copied.
    static let sharedChunkMinimum = 16 * 1024

    /// The buffer's readable bytes as a `StreamedBody` chunk.
    ///
    /// A large chunk shares the buffer's memory (the `Data` keeps its storage alive; nothing writes to it
    /// again): copying 64 KiB chunks cost more than a tenth of the throughput of a download. A small one, or
    /// one that is a small part of a large storage, is copied, so that a chunk holds at most twice its size in
    /// memory and the reader's buffer (``ChunkPipe/defaultHighWater``) keeps memory bounded.
    static func chunk(_ buffer: ByteBuffer) -> Data {
        let count = buffer.readableBytes
        guard count >= sharedChunkMinimum, count >= buffer.storageCapacity / 2 else {
            return buffer.withUnsafeReadableBytes { Data($0) }
        }
        return buffer.withUnsafeReadableBytesWithStorageManagement { bytes, storage in
            _ = storage.retain()
            return Data(
                bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!),
                count: count,
                deallocator: .custom { _, _ in storage.release() }
            )
        }
    }

    /// Sends the request and waits for the response head, under the call's ``Deadline`` if it has one.
    ///
    /// - Returns: The response, its body still to read, and the deadline that bounded it.
    private func execute(_ request: URLRequest) async throws -> (HTTPClientResponse, Deadline?) {
        // Validated (RequestValidation's checks) while converted: one pass over the headers.
        var outgoing = try Self.makeHead(from: request)
        // AsyncHTTPClient 1.37 still sends a request whose task was cancelled before `execute`.
        try Task.checkCancellation()
        // A deadline on a test's manual clock is virtual: the timeout middleware enforces it, not the wire.
        let callDeadline = Deadline.current.flatMap { $0.isRealTime ? $0 : nil }
        let deadline: NIODeadline
        if let callDeadline {
            let left = callDeadline.timeLeft
            guard left > .zero else { throw Self.deadlinePassed(callDeadline, request: request) }
            deadline = Self.nioDeadline(after: left)
        } else {
            deadline = .distantFuture
        }
        outgoing.body = try Self.makeBody(from: request)
        do {
            // AsyncHTTPClient applies the deadline until the head arrives, not to the body.
            return (try await client.execute(outgoing, deadline: deadline), callDeadline)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            guard Self.wasLostBeforeResponse(error), Self.maySendAgain(request) else {
                throw Self.translate(error, request: request, deadline: callDeadline)
            }
        }
        // A pooled connection the server had closed: once more, on another connection.
        outgoing.body = try Self.makeBody(from: Replay.fresh(request))
        do {
            return (try await client.execute(outgoing, deadline: deadline), callDeadline)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.translate(error, request: request, deadline: callDeadline)
        }
    }

    // MARK: Connections closed while idle

    /// Whether `error` (as AsyncHTTPClient throws it, or as ``translate(_:request:deadline:duringBody:)`` made it) says that
    /// the connection was closed before any response came: the request was written to a pooled connection the
    /// server had closed while it was idle (`I/O on closed channel`), or the server closed or reset it without
    /// answering, as a server that closes an idle connection just as a request goes out does.
    static func wasLostBeforeResponse(_ error: any Error) -> Bool {
        switch error {
        case let error as ChannelError:
            return error == .ioOnClosedChannel || error == .eof || error == .outputClosed
        case let error as HTTPClientError:
            return error == .remoteConnectionClosed
        case let error as IOError:
            return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE
        case let error as CourierError:
            guard error.code == .transport, let underlying = error.underlying else { return false }
            if let posix = underlying as? POSIXError { return posix.code == .ECONNRESET || posix.code == .EPIPE }
            return wasLostBeforeResponse(underlying)
        default:
            return false
        }
    }

    /// Whether the transport may send `request` again by itself after its connection was lost before any
    /// response: its method is idempotent (RFC 9110 §9.2.2: `GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`, `DELETE`) or
    /// it has an `Idempotency-Key` that is not blank, and its body can be sent again. A `POST` without a key is never sent twice.
    static func maySendAgain(_ request: URLRequest) -> Bool {
        Replay.transportMaySendAgain(request)
    }

    // MARK: Deadlines and errors

    /// `NIODeadline.now()` plus `duration`; `distantFuture` for a duration too long to count in nanoseconds.
    static func nioDeadline(after duration: Duration) -> NIODeadline {
        let (seconds, attoseconds) = duration.components
        // About 292 years of nanoseconds fit in an Int64; a deadline further away is as good as none.
        guard seconds < 9_000_000_000 else { return .distantFuture }
        return .now() + .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The error for a call whose ``Deadline`` passed while (or before) the transport was waiting: the one the
    /// timeout middleware that set the deadline reports, whichever of the two notices first.
    static func deadlinePassed(_ deadline: Deadline, request: URLRequest) -> CourierError {
        deadline.passedError(for: request)
    }

    /// What an error of AsyncHTTPClient or SwiftNIO becomes: a ``CourierError`` that says what happened when
    /// the error is known, the error itself otherwise (the client reports it as ``CourierError/Code/transport``).
    ///
    /// A socket error is reported with a `POSIXError` underneath, the way ``RetryPolicy/isTransient(_:)``
    /// recognises a refused, reset or timed-out connection. Before the head (`duringBody` false), a connection
    /// closed without an answer says so, and a head SwiftNIO's parser refuses (a field value with a control
    /// character, a bad status line) is ``CourierError/Code/nonHTTPResponse``, as ``URLSessionTransport`` reports it.
    static func translate(
        _ error: any Error,
        request: URLRequest,
        deadline: Deadline?,
        duringBody: Bool = false
    ) -> any Error {
        switch error {
        case let error as HTTPClientError:
            if error == .alreadyShutdown {
                return CourierError(
                    .clientShutDown,
                    message: "the AsyncHTTPClient HTTPClient is shut down",
                    request: request,
                    underlying: error
                )
            }
            if error == .deadlineExceeded, let deadline {
                return deadlinePassed(deadline, request: request)
            }
            if error == .remoteConnectionClosed && !duringBody {
                return connectionClosed(request: request, underlying: error)
            }
            if error == .connectTimeout {
                return CourierError(
                    .transport,
                    message:
                        "cannot connect to \(TransportFailure.endpoint(of: request)) (no answer within the connect timeout)",
                    request: request,
                    underlying: POSIXError(.ETIMEDOUT)
                )
            }
            return error
        case let error as ChannelError where !duringBody && wasLostBeforeResponse(error):
            return connectionClosed(request: request, underlying: error)
        case let error as ResponseStatusGuard.InvalidStatus:
            return CourierError(
                .nonHTTPResponse,
                message: "the response from \(TransportFailure.endpoint(of: request)) has the status \(error.code), "
                    + "which is not an HTTP status (100 to 999)",
                request: request
            )
        case let error as HTTPParserError where !duringBody:
            return CourierError(
                .nonHTTPResponse,
                message: "the response from \(TransportFailure.endpoint(of: request)) is not valid HTTP/1.1 (\(error))",
                request: request,
                underlying: error
            )
        case let error as IOError:
            return socketFailure(errno: error.errnoCode, request: request) ?? error
        case let error as NIOConnectionError:
            // A host name: every address it resolved to failed; the last attempt's error says why.
            if let last = error.connectionErrors.last?.error as? IOError {
                return socketFailure(errno: last.errnoCode, request: request) ?? error
            }
            return error
        default:
            return error
        }
    }

    /// The error for a connection that the server closed before any response came: a
    /// ``CourierError/Code/transport`` error with `POSIXError(.ECONNRESET)` underneath, so that
    /// ``RetryPolicy/isTransient(_:)`` lets the retry middleware send an idempotent request again (the transport
    /// has already sent it once more by itself when ``maySendAgain(_:)``).
    private static func connectionClosed(request: URLRequest, underlying: any Error) -> CourierError {
        CourierError(
            .transport,
            message: "the connection to \(TransportFailure.endpoint(of: request)) was closed before the response "
                + "arrived (\(underlying))",
            request: request,
            underlying: POSIXError(.ECONNRESET)
        )
    }

    /// A ``CourierError/Code/transport`` error for a socket call that failed with `errno`, or `nil` for a code
    /// `POSIXError` does not know.
    private static func socketFailure(errno code: Int32, request: URLRequest) -> CourierError? {
        guard let posix = POSIXErrorCode(rawValue: code) else { return nil }
        let endpoint = TransportFailure.endpoint(of: request)
        let message: String
        switch posix {
        case .ECONNREFUSED: message = "cannot connect to \(endpoint) (connection refused)"
        case .ETIMEDOUT: message = "cannot connect to \(endpoint) (the connection timed out)"
        case .EHOSTUNREACH, .EHOSTDOWN: message = "cannot connect to \(endpoint) (host unreachable)"
        case .ENETUNREACH, .ENETDOWN: message = "cannot connect to \(endpoint) (network unreachable)"
        case .ECONNRESET: message = "the connection to \(endpoint) was reset"
        case .EPIPE: message = "the connection to \(endpoint) was closed while sending"
        default: message = "the connection to \(endpoint) failed (\(String(cString: strerror(code))))"
        }
        return CourierError(.transport, message: message, request: request, underlying: POSIXError(posix))
    }

    // MARK: Conversion

    /// The request's URL, method and headers, checked as ``RequestValidation/validate(_:)`` checks them
    /// (an absolute URL, a token method, token header names, header values without CR, LF or NUL) while
    /// they are converted, so the headers are gone through once.
    static func makeHead(from request: URLRequest) throws -> HTTPClientRequest {
        let url = try RequestValidation.validatedURL(of: request)
        let method = request.httpMethod ?? "GET"
        try RequestValidation.validateMethod(method, request: request)
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: method)
        if let fields = request.allHTTPHeaderFields, !fields.isEmpty {
            outgoing.headers.reserveCapacity(fields.count)
            for (name, value) in fields {
                try RequestValidation.validateHeader(name: name, value: value, request: request)
                outgoing.headers.add(name: name, value: value)
            }
        }
        return outgoing
    }

    /// The request's body: `httpBody`; a body Courier streams (a file, a stream factory, a multipart form)
    /// streamed from its source, with its length when known; any other `httpBodyStream` read whole.
    static func makeBody(from request: URLRequest) throws -> HTTPClientRequest.Body? {
        if let body = request.httpBody {
            return .bytes(body)
        }
        if let stream = request.httpBodyStream {
            if let upload = stream as? UploadBodyStream {
                let length: HTTPClientRequest.Body.Length = upload.source.length.map { .known($0) } ?? .unknown
                return .stream(UploadByteBuffers(chunks: upload.source.chunks), length: length)
            }
            return .bytes(try readAll(stream, request: request))
        }
        return nil
    }

    /// A streamed body's chunks as the `ByteBuffer`s AsyncHTTPClient sends; it asks for the next one only
    /// when it has room, so a large body is never in memory whole.
    struct UploadByteBuffers: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let chunks: UploadChunks

        func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks.makeAsyncIterator()) }

        struct Iterator: AsyncIteratorProtocol {
            var chunks: UploadChunks.Iterator

            mutating func next() async throws -> ByteBuffer? {
                try await chunks.next().map { ByteBuffer(bytes: $0) }
            }
        }
    }

    static func readAll(_ stream: InputStream, request: URLRequest) throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        stream.open()
        defer { stream.close() }
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 {
                throw CourierError.invalidRequest(
                    "the request's body stream could not be read",
                    request: request,
                    underlying: stream.streamError
                )
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    func collect(
        _ response: HTTPClientResponse,
        for request: URLRequest
    ) async throws -> (Data, HTTPURLResponse) {
        let head = try Self.makeResponse(response, for: request)
        let status = Int(response.status.code)
        var body = ResponseBodyAccumulator(limit: maximumResponseSize)
        if let length = response.headers.first(name: "content-length").flatMap({ NetworkNumber.integer($0) }) {
            if ResponseBodyAccumulator.announcedLengthExceeds(
                maximumResponseSize,
                expectedContentLength: length,
                method: request.httpMethod,
                status: status
            ) {
                // Dropping the unread body cancels the request.
                throw CourierError.bodyTooLarge(
                    limit: maximumResponseSize,
                    announcedLength: length,
                    request: request,
                    response: head,
                    transport: "AsyncHTTPClientTransport"
                )
            }
            body.reserve(expectedContentLength: length)
        }
        // Leaving the loop early (a body too large, a cancelled task) ends the body stream, and
        // AsyncHTTPClient cancels the request.
        for try await chunk in response.body {
            guard body.append(chunk.readableBytesView) else {
                throw CourierError.bodyTooLarge(
                    limit: maximumResponseSize,
                    request: request,
                    response: head,
                    transport: "AsyncHTTPClientTransport"
                )
            }
        }
        return (body.data, head)
    }

    /// The response head as an `HTTPURLResponse`, repeated fields joined with commas.
    ///
    /// On Linux, FoundationNetworking's initializer is most of what the transport costs on top of
    /// AsyncHTTPClient: it capitalizes and compares every field name through `NSString` and parses
    /// `Content-Type` character by character (≈ 117,000 instructions for 8 typical fields, Swift 6.3.1; its
    /// `init(coder:)` does the same work and bridges on top). There is no cheaper way to make one, and
    /// ``Transport`` returns one; the fields dictionary made here costs a few thousand more.
    ///
    /// - Throws: ``CourierError/Code/nonHTTPResponse`` for a head with more than
    ///   ``ResponseHeadCheck/maximumFieldCount`` fields.
    static func makeResponse(_ response: HTTPClientResponse, for request: URLRequest) throws -> HTTPURLResponse {
        let url = request.url ?? URL(string: "about:blank")!
        // HTTPURLResponse's initializer fails only for a malformed HTTP version, which is built here.
        return HTTPURLResponse(
            url: url,
            statusCode: Int(response.status.code),
            httpVersion: Self.versionString(response.version),
            headerFields: try headerFields(response.headers, for: request)
        )!
    }

    /// The fields as `HTTPURLResponse` takes them, checked and joined by ``HeaderFieldJoining/responseFields(_:count:for:maximumFieldCount:)``
    /// (which the fuzz target `header-fields` runs): one entry per field name, compared case-insensitively (RFC
    /// 9110), its values joined with ", " in the order they came (`Set-Cookie` too, as `URLSession` does), under
    /// the name's first spelling; linear in the size of the head.
    ///
    /// - Throws: ``CourierError/Code/nonHTTPResponse`` for more than `maximumFieldCount` fields
    ///   (``ResponseHeadCheck/maximumFieldCount``, 1,000; tests raise it), or for what AsyncHTTPClient's parser
    ///   already refuses: a name or value with a control character, both `Transfer-Encoding` and
    ///   `Content-Length`.
    static func headerFields(
        _ headers: NIOHTTP1.HTTPHeaders,
        for request: URLRequest?,
        maximumFieldCount: Int = ResponseHeadCheck.maximumFieldCount
    ) throws -> [String: String] {
        try HeaderFieldJoining.responseFields(
            headers,
            count: headers.count,
            for: request,
            maximumFieldCount: maximumFieldCount
        )
    }

    /// `HTTP/1.1` and the like, without string interpolation for the usual versions.
    static func versionString(_ version: NIOHTTP1.HTTPVersion) -> String {
        switch (version.major, version.minor) {
        case (1, 1): "HTTP/1.1"
        case (2, 0): "HTTP/2.0"
        case (1, 0): "HTTP/1.0"
        default: "HTTP/\(version.major).\(version.minor)"
        }
    }
}
#endif
