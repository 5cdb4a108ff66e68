#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A buffered call through AsyncHTTPClient's delegate API: the event loop collects the body into one `Data`
/// under the size limit, and AsyncHTTPClient bounds the whole exchange, from connecting to the body's last byte,
/// by the call's ``Deadline``.
///
/// Why not its async API: that API's deadline stops at the response head, so bounding the body took a child task
/// racing a timer for every call with a deadline (about 30,000 instructions, a task and a wake-up); here the
/// deadline AsyncHTTPClient schedules anyway covers the body as well. The delegate API also takes the request's
/// `URL` as it is, where the async one parses a string again.
extension AsyncHTTPClientTransport {
    /// Sends the request and collects the body; see ``send(_:)`` for what it promises.
    func collectThroughDelegate(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let uploads = UploadStreamer()
        // Validated (RequestValidation's checks) while converted: one pass over the headers.
        let outgoing = try Self.makeRequest(from: request, uploads: uploads, eventLoopGroup: client.eventLoopGroup)
        // AsyncHTTPClient 1.37 still sends a request whose task was cancelled before `execute`.
        try Task.checkCancellation()
        // A deadline on a test's manual clock is virtual: the timeout middleware enforces it, not the wire.
        let callDeadline = Deadline.current.flatMap { $0.isRealTime ? $0 : nil }
        var deadline: NIODeadline?
        if let callDeadline {
            let left = callDeadline.timeLeft
            guard left > .zero else { throw Self.deadlinePassed(callDeadline, request: request) }
            deadline = Self.nioDeadline(after: left)
        }
        let delegate = CollectingDelegate(limit: maximumResponseSize, method: request.httpMethod)
        let task = client.execute(request: outgoing, delegate: delegate, eventLoop: .indifferent, deadline: deadline)
        do {
            let collected = try await withTaskCancellationHandler {
                try await task.futureResult.get()
            } onCancel: {
                task.cancel()
            }
            return (collected.body, Self.makeResponse(collected.head, for: request))
        } catch {
            uploads.cancel()
            if Task.isCancelled { throw CancellationError() }
            if let tooLarge = error as? CollectingDelegate.BodyTooLarge {
                throw CourierError.bodyTooLarge(
                    limit: maximumResponseSize,
                    announcedLength: tooLarge.announcedLength,
                    request: request,
                    response: Self.makeResponse(tooLarge.head, for: request),
                    transport: "AsyncHTTPClientTransport"
                )
            }
            throw Self.translate(error, request: request, deadline: callDeadline)
        }
    }

    /// The request as AsyncHTTPClient's delegate API takes it, checked as ``RequestValidation/validate(_:)``
    /// checks it (an absolute URL, a token method, token header names, header values without CR, LF or NUL)
    /// while it is converted, so the headers are gone through once.
    ///
    /// The body: `httpBody` as it is; a body Courier streams (a file, a stream factory, a multipart form)
    /// streamed from its source by `uploads`, with its length when known; any other `httpBodyStream` read whole.
    static func makeRequest(
        from request: URLRequest,
        uploads: UploadStreamer,
        eventLoopGroup: any EventLoopGroup
    ) throws -> HTTPClient.Request {
        let url = try RequestValidation.validatedURL(of: request)
        let method = request.httpMethod ?? "GET"
        try RequestValidation.validateMethod(method, request: request)
        var headers = NIOHTTP1.HTTPHeaders()
        if let fields = request.allHTTPHeaderFields, !fields.isEmpty {
            headers.reserveCapacity(fields.count)
            for (name, value) in fields {
                try RequestValidation.validateHeader(name: name, value: value, request: request)
                headers.add(name: name, value: value)
            }
        }
        var body: HTTPClient.Body?
        if let data = request.httpBody {
            body = .data(data)
        } else if let stream = request.httpBodyStream {
            if let upload = stream as? UploadBodyStream {
                body = uploads.body(upload.source, eventLoopGroup: eventLoopGroup)
            } else {
                body = .data(try readAll(stream, request: request))
            }
        }
        do {
            return try HTTPClient.Request(
                url: url,
                method: NIOHTTP1.HTTPMethod(rawValue: method),
                headers: headers,
                body: body
            )
        } catch {
            throw translate(error, request: request, deadline: nil)
        }
    }
}

/// Receives one buffered response from AsyncHTTPClient, on the request's event loop: keeps the head and
/// collects the body, and fails the request (AsyncHTTPClient then closes the connection) as soon as the
/// `Content-Length` or the bytes received pass the limit, so no more than the limit is ever held.
final class CollectingDelegate: HTTPClientResponseDelegate, Sendable {
    /// The head and the whole body.
    struct Collected: Sendable {
        let head: HTTPResponseHead
        let body: Data
    }

    /// The request failed because its body is larger than the limit.
    struct BodyTooLarge: Error {
        let head: HTTPResponseHead
        let announcedLength: Int64?
    }

    private struct State {
        var head: HTTPResponseHead?
        var body: ResponseBodyAccumulator
    }

    private let method: String?
    // AsyncHTTPClient calls a delegate on the task's event loop, one event after the other; the lock is never
    // contended, and keeps the type honestly `Sendable`.
    private let state: LockedState<State>

    init(limit: Int, method: String?) {
        self.method = method
        state = LockedState(State(body: ResponseBodyAccumulator(limit: limit)))
    }

    func didReceiveHead(task: HTTPClient.Task<Collected>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let tooLarge = state.withLock { state -> BodyTooLarge? in
            state.head = head
            guard let length = head.headers.first(name: "content-length").flatMap({ Int64($0) }) else { return nil }
            let limit = state.body.limit
            let status = Int(head.status.code)
            if ResponseBodyAccumulator.announcedLengthExceeds(
                limit,
                expectedContentLength: length,
                method: method,
                status: status
            ) {
                return BodyTooLarge(head: head, announcedLength: length)
            }
            state.body.reserve(expectedContentLength: length)
            return nil
        }
        // A failed future fails the request with its error and closes the connection.
        if let tooLarge { return task.eventLoop.makeFailedFuture(tooLarge) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Collected>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let tooLarge = state.withLock { state -> BodyTooLarge? in
            guard !state.body.append(buffer.readableBytesView), let head = state.head else { return nil }
            return BodyTooLarge(head: head, announcedLength: nil)
        }
        if let tooLarge { return task.eventLoop.makeFailedFuture(tooLarge) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Collected>) throws -> Collected {
        try state.withLock { state in
            // AsyncHTTPClient reports the head before it finishes a request.
            guard let head = state.head else { throw HTTPClientError.remoteConnectionClosed }
            return Collected(head: head, body: state.body.data)
        }
    }
}

/// Streams a Courier upload source's chunks to AsyncHTTPClient's body writer, from a task of its own, each
/// chunk after the previous one was written (AsyncHTTPClient's backpressure), so a large body is never in
/// memory whole. ``cancel()`` stops reading the source when the request failed.
final class UploadStreamer: Sendable {
    private let task = LockedState<Task<Void, Never>?>(nil)

    /// A body AsyncHTTPClient asks for when it sends the request (each time it sends it).
    func body(_ source: UploadSource, eventLoopGroup: any EventLoopGroup) -> HTTPClient.Body {
        let chunks = source.chunks
        let length = source.length
        return .stream(contentLength: length) { [self] writer in
            // AsyncHTTPClient asks for the body on the request's event loop, which `any()` gives back.
            let promise = eventLoopGroup.any().makePromise(of: Void.self)
            let upload = Task {
                do {
                    var sent: Int64 = 0
                    for try await chunk in chunks {
                        sent += Int64(chunk.count)
                        let part = IOData.byteBuffer(ByteBuffer(bytes: chunk))
                        if sent == length {
                            // The last chunk of a body of known length is written and the body ended in one turn
                            // of the event loop. A server may answer and close as soon as it has every byte; if
                            // the end came a turn later, AsyncHTTPClient would read that answer and the close
                            // while it still counts the request as sending, and fail it.
                            promise.futureResult.eventLoop.execute {
                                writer.write(part).cascade(to: promise)
                            }
                            return
                        }
                        try await writer.write(part).get()
                    }
                    promise.succeed()
                } catch {
                    promise.fail(error)
                }
            }
            task.withLock { $0 = upload }
            return promise.futureResult
        }
    }

    /// Stops the upload, if one runs.
    func cancel() {
        task.withLock { $0 }?.cancel()
    }
}
#endif
