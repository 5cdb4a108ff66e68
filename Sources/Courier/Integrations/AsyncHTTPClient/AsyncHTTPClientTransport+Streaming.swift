#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A streamed body through AsyncHTTPClient's delegate API: the delegate's event loop writes each body part into
/// the reader's ``ChunkPipe`` itself, with no task in between (AsyncHTTPClient hands a read's parts to that loop
/// together when the connection is on another one), and the parts of one read wake the reader once, as with
/// AsyncHTTPClient's own async body; the body can still be stopped from any task (the pipe's stop handler
/// cancels the request).
extension AsyncHTTPClientTransport {
    /// Sends the request and waits for the head under the call's real-time ``Deadline``; the body streams into
    /// the returned ``StreamedBody``. A request whose pooled connection the server had closed is sent once more,
    /// when ``maySendAgain(_:)``, as ``send(_:)`` does.
    func streamThroughDelegate(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        do {
            return try await streamOnce(request)
        } catch {
            guard !Task.isCancelled, Self.wasLostBeforeResponse(error), Self.maySendAgain(request) else { throw error }
        }
        return try await streamOnce(Replay.fresh(request))
    }

    private func streamOnce(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        // Validated (RequestValidation's checks) while converted: one pass over the headers.
        let head = try Self.makeHead(from: request)
        // AsyncHTTPClient 1.37 still sends a request whose task was cancelled before `execute`.
        try Task.checkCancellation()
        let callDeadline = Deadline.current.flatMap { $0.isRealTime ? $0 : nil }
        var headDeadline: NIODeadline?
        if let callDeadline {
            let left = callDeadline.timeLeft
            guard left > .zero else { throw Self.deadlinePassed(callDeadline, request: request) }
            headDeadline = Self.nioDeadline(after: left)
        }
        let delegate = StreamDelegate(request: request, deadline: callDeadline, eventLoopGroup: client.eventLoopGroup)
        let outgoing: HTTPClient.Request
        do {
            // `makeHead` checked that the URL is there and absolute.
            outgoing = try HTTPClient.Request(
                url: request.url!,
                method: head.method,
                headers: head.headers,
                body: try Self.makeDelegateBody(from: request, delegate: delegate)
            )
        } catch let error as CourierError {
            throw error
        } catch {
            throw Self.translate(error, request: request, deadline: callDeadline)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard delegate.waiting(continuation) else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                // No `deadline:`: AsyncHTTPClient would apply it to the body too; the delegate's timer bounds the
                // wait for the head only. Any pooled connection will do (`.indifferent`): a request pinned to an
                // event loop with no idle connection there gets a connection of its own, which AsyncHTTPClient
                // closes once the request ends, so streams pinned to a loop would open a connection for most
                // calls. The cost: when the connection is on another loop than the delegate's, each body part
                // crosses between them (see Benchmarks/RESULTS.md).
                let task = client.execute(request: outgoing, delegate: delegate, eventLoop: .indifferent)
                delegate.started(task, headDeadline: headDeadline)
            }
        } onCancel: {
            delegate.cancel()
        }
    }

    /// The request's body for the delegate API, as ``makeBody(from:)`` makes it for the async one: `httpBody`; a
    /// body Courier streams, from its source with its length when known; any other `httpBodyStream` read whole.
    static func makeDelegateBody(from request: URLRequest, delegate: StreamDelegate) throws -> HTTPClient.Body? {
        if let body = request.httpBody {
            return .bytes(body)
        }
        guard let stream = request.httpBodyStream else { return nil }
        if let upload = stream as? UploadBodyStream {
            let chunks = upload.source.chunks
            return .stream(contentLength: upload.source.length) { writer in
                delegate.upload(chunks, to: writer)
            }
        }
        return .bytes(try readAll(stream, request: request))
    }

    /// Receives one streamed response from AsyncHTTPClient, on the request's event loop, and carries out
    /// ``AsyncHTTPClientStreamStateMachine``'s transitions outside its lock.
    final class StreamDelegate: HTTPClientResponseDelegate {
        typealias Response = Void
        typealias HeadContinuation = CheckedContinuation<(StreamedBody, HTTPURLResponse), any Error>
        private typealias Machine = AsyncHTTPClientStreamStateMachine<
            HeadContinuation, HTTPClient.Task<Void>, Scheduled<Void>, EventLoopPromise<Void>
        >

        private struct State {
            var machine = Machine()
            /// The task that streams the request's body from a Courier upload source, while it runs.
            var upload: Task<Void, Never>?
        }

        let request: URLRequest
        let deadline: Deadline?
        let pipe = ChunkPipe()
        private let eventLoopGroup: any EventLoopGroup
        private let state = LockedState(State())

        init(request: URLRequest, deadline: Deadline?, eventLoopGroup: any EventLoopGroup) {
            self.request = request
            self.deadline = deadline
            self.eventLoopGroup = eventLoopGroup
        }

        // MARK: The caller's side

        /// - Returns: `false` when the caller was cancelled already.
        func waiting(_ continuation: HeadContinuation) -> Bool {
            state.withLock { $0.machine.waiting(continuation) }
        }

        /// AsyncHTTPClient took the request: the caller's cancellation and the head's deadline can now cancel it.
        func started(_ task: HTTPClient.Task<Void>, headDeadline: NIODeadline?) {
            if let late = state.withLock({ $0.machine.started(task) }) {
                late.cancel()
                return
            }
            guard let headDeadline, headDeadline != .distantFuture else { return }
            let timer = task.eventLoop.scheduleTask(deadline: headDeadline) { [self] in headDeadlinePassed() }
            if let late = state.withLock({ $0.machine.timerSet(timer) }) {
                late.cancel()
            }
        }

        /// The caller's task was cancelled while waiting for the head.
        func cancel() {
            guard let failure = state.withLock({ $0.machine.cancelled() }) else { return }
            failure.timer?.cancel()
            failure.task?.cancel()
            failure.continuation.resume(throwing: CancellationError())
        }

        private func headDeadlinePassed() {
            guard let deadline, let failure = state.withLock({ $0.machine.deadlinePassed() }) else { return }
            failure.task?.cancel()
            failure.continuation.resume(throwing: AsyncHTTPClientTransport.deadlinePassed(deadline, request: request))
        }

        // MARK: The request's body

        /// Streams a Courier upload source's chunks to `writer` from a task of its own, each after the last one
        /// was written (AsyncHTTPClient's backpressure); the task is cancelled when the request fails.
        func upload(_ chunks: UploadChunks, to writer: HTTPClient.Body.StreamWriter) -> EventLoopFuture<Void> {
            // AsyncHTTPClient asks for the body on the request's event loop, which `any()` gives back.
            let promise = eventLoopGroup.any().makePromise(of: Void.self)
            let upload = Task {
                do {
                    for try await chunk in chunks {
                        try await writer.write(.byteBuffer(ByteBuffer(bytes: chunk))).get()
                    }
                    promise.succeed()
                } catch {
                    promise.fail(error)
                }
            }
            state.withLock { $0.upload = upload }
            return promise.futureResult
        }

        // MARK: AsyncHTTPClient's events, on the request's event loop

        func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            let response: HTTPURLResponse
            do {
                response = try AsyncHTTPClientTransport.makeResponse(
                    HTTPClientResponse(version: head.version, status: head.status, headers: head.headers),
                    for: request
                )
            } catch {
                // A head Courier refuses (too many fields) fails the wait for it, and the request is cancelled.
                if let failure = state.withLock({ $0.machine.headRefused() }) {
                    failure.timer?.cancel()
                    failure.continuation.resume(throwing: error)
                }
                task.cancel()
                return task.eventLoop.makeSucceededVoidFuture()
            }
            guard let (continuation, timer) = state.withLock({ $0.machine.receivedHead() }) else {
                // The wait ended (cancelled, or past its deadline) and the request is being cancelled.
                return task.eventLoop.makeSucceededVoidFuture()
            }
            timer?.cancel()
            // Wired only once the body is handed over: the pipe lets its handlers go when the body ends.
            pipe.onDemand { [self] in
                state.withLock { $0.machine.demanded() }?.succeed()
            }
            pipe.onStop { [self] in
                let pending = state.withLock { $0.machine.stopped() }
                task.cancel()
                pending?.succeed()
            }
            continuation.resume(returning: (StreamedBody(pipe: pipe), response))
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            // The reader is woken once for the parts of one read: AsyncHTTPClient hands them over in one go (in
            // the channel's read, or in one task hopped to this loop), and the flush is queued behind it.
            switch pipe.buffer(AsyncHTTPClientTransport.chunk(buffer)) {
            case .proceed:
                return task.eventLoop.makeSucceededVoidFuture()
            case .flushSoon:
                task.eventLoop.execute { [pipe] in pipe.flush() }
                return task.eventLoop.makeSucceededVoidFuture()
            case .pause:
                break
            }
            // Paused: AsyncHTTPClient stops reading from the socket until the reader's demand completes this.
            let promise = task.eventLoop.makePromise(of: Void.self)
            if !state.withLock({ $0.machine.paused(promise) }) {
                promise.succeed()
            }
            return promise.futureResult
        }

        func didFinishRequest(task: HTTPClient.Task<Void>) throws {
            end(error: nil)
        }

        func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
            end(error: error)
        }

        private func end(error: (any Error)?) {
            let (action, upload) = state.withLock { state in
                let action = error == nil ? state.machine.finished() : state.machine.failed()
                defer { state.upload = nil }
                return (action, state.upload)
            }
            if error != nil { upload?.cancel() }
            switch action {
            case .failHead(let continuation, let timer):
                timer?.cancel()
                // AsyncHTTPClient reports a head before finishing; a request that finished without one lost it.
                let failure = error ?? HTTPClientError.remoteConnectionClosed
                continuation.resume(
                    throwing: AsyncHTTPClientTransport.translate(failure, request: request, deadline: deadline)
                )
            case .finishBody(let pendingDemand):
                pipe.finish(error: error.map { AsyncHTTPClientTransport.bodyFailure($0, request: request) })
                pendingDemand?.succeed()
            case .none:
                break
            }
        }
    }
}
#endif
