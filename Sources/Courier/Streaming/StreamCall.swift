import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One streamed call, bound to the task that makes it (and so to every child task of its chain): where the
/// transport leaves the bodies it streams, so that the middleware see only the head.
///
/// **How a streamed request passes through the middleware.** `Client.stream` sends the request through the
/// same chain as `send`, ending in a transport adapter that calls the transport's
/// ``Transport/stream(_:)``. A `2xx` response's body is left here, keyed by the response object, and the chain
/// gets the head with an empty body; any other status is read whole (at most ``errorBodyLimit`` bytes), so a
/// layer that decodes an error, retries a `503` or refreshes on a `401` sees its body as for a plain call.
/// When the chain returns, the body of the response it returned is handed to the caller; a body it left
/// behind (an attempt that retry or hedging discarded) is stopped.
final class StreamCall: Sendable {
    /// The streamed call the current task belongs to, if any.
    @TaskLocal static var current: StreamCall?

    /// The largest body of a response that does not stream (any status but `2xx`): 10 MiB.
    static let errorBodyLimit = 10 * 1024 * 1024

    private struct Left {
        let response: HTTPURLResponse
        let body: StreamedBody
    }

    private let bodies = LockedState<[Left]>([])

    /// Leaves the body of a streamed `response` for the caller.
    func leave(_ body: StreamedBody, for response: HTTPURLResponse) {
        bodies.withLock { $0.append(Left(response: response, body: body)) }
    }

    /// Runs `hook` when the body of `response` (returned with an empty body) ends: read to its end (`nil`), failed
    /// (the error) or stopped (`CancellationError`, also when the chain discards it). The body is the one
    /// ``take(for:data:)`` would hand over now, so a response object a middleware inside made of its own is followed
    /// to the stream it stands for.
    ///
    /// - Returns: `false` when `response` does not stream (nothing is registered).
    func whenBodyEnds(of response: HTTPURLResponse, _ hook: @escaping @Sendable ((any Error)?) -> Void) -> Bool {
        guard let body = bodies.withLock({ Self.match(for: response, data: Data(), in: $0).map { $0.body } }) else {
            return false
        }
        body.pipe.onEnd(hook)
        return true
    }

    /// The body left for `response`: the one left with that very object, or else, for a response a middleware made
    /// of its own, the only body left when it is of a response with the same status and `data` is empty.
    private static func match(for response: HTTPURLResponse, data: Data, in left: [Left]) -> Left? {
        if let match = left.first(where: { $0.response === response }) { return match }
        if left.count == 1, data.isEmpty, left[0].response.statusCode == response.statusCode { return left[0] }
        return nil
    }

    /// The body of `response`, the response the chain returned with `data`; every other body left is stopped.
    ///
    /// A middleware that returns a response object of its own in place of a streamed one (to change a header,
    /// say) keeps the stream when exactly one body was left, of a response with the same status, and it returned
    /// no bytes; otherwise `data` is the body. (A hedged call whose winner did not stream never gets the body of
    /// a losing attempt's `200`.)
    func take(for response: HTTPURLResponse, data: Data) -> StreamedBody {
        let left = bodies.withLock { bodies in
            defer { bodies = [] }
            return bodies
        }
        let chosen = Self.match(for: response, data: data, in: left)?.body
        for other in left where chosen.map({ $0.handle !== other.body.handle }) ?? true {
            other.body.cancel()
        }
        return chosen ?? StreamedBody(data)
    }

    /// Stops every body left: the chain failed.
    func discardAll() {
        let left = bodies.withLock { bodies in
            defer { bodies = [] }
            return bodies
        }
        for entry in left { entry.body.cancel() }
    }
}

/// The end of a streamed call's chain: a ``Transport`` that asks the client's transport to stream, leaves a
/// `2xx` body in the ``StreamCall`` and returns the head, and reads any other body whole.
struct StreamingTransport: Transport {
    let base: any Transport

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (body, response) = try await base.stream(request)
        guard let call = StreamCall.current, (200..<300).contains(response.statusCode) else {
            return (try await Self.collect(body, for: request, response: response), response)
        }
        call.leave(body, for: response)
        return (Data(), response)
    }

    func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        try await base.stream(request)
    }

    private static func collect(
        _ body: StreamedBody,
        for request: URLRequest,
        response: HTTPURLResponse
    ) async throws -> Data {
        do {
            return try await body.collect(upTo: StreamCall.errorBodyLimit)
        } catch let error as CourierError where error.code == .bodyTooLarge {
            throw CourierError(
                .bodyTooLarge,
                message: "the body of the \(response.statusCode) response to a streamed call is larger than "
                    + "\(StreamCall.errorBodyLimit) bytes; only 2xx responses stream, others are read whole",
                request: request,
                response: response
            )
        }
    }
}
