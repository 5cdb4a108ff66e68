import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one answer to "can this request be sent again?", asked by every layer that sends a request more than
/// once: retry, the restart after a token refresh, `307`/`308` redirects and hedging.
///
/// A body of bytes (`httpBody`), or no body, is sent again byte for byte. A body Courier streams (a file, a
/// stream factory, a multipart form: an ``UploadBodyStream``) is made again: every re-send gets a fresh
/// stream over the same source, read from the first byte, so even concurrent sends (hedging) never share
/// one. A form with a one-shot stream part, and any other body stream (`httpBodyStream`), is read as it is
/// sent and cannot be rewound, so a second send would carry whatever is left of it — usually nothing. Such a
/// request is never sent again: the layer that would do it throws ``CourierError/Code/bodyNotReplayable``
/// instead (hedging, which never needs a second send, just sends it once).
///
/// Every caller sends the request these functions return, never the one it passed in.
enum Replay {
    /// Whether `request` can be sent again.
    static func isReplayable(_ request: URLRequest) -> Bool {
        guard let stream = request.httpBodyStream else { return true }
        return (stream as? UploadBodyStream)?.source.isReplayable ?? false
    }

    /// Whether a transport may send `request` again by itself, on a connection it opened after the one it wrote the
    /// request to closed before any response: the server may have acted on it, so only when its body can be sent
    /// again and its method is idempotent or it carries an idempotency key (``RetryPolicy/isIdempotencyKey(_:)``).
    static func transportMaySendAgain(_ request: URLRequest) -> Bool {
        guard isReplayable(request) else { return false }
        if HTTPMethod(rawValue: request.httpMethod ?? "GET").isIdempotent { return true }
        return RetryPolicy.isIdempotencyKey(request.value(forHTTPHeaderField: "Idempotency-Key"))
    }

    /// The body stream to give a session that sends `request` again by itself (libcurl does, on Linux, when a
    /// kept-alive connection closed before any response, and asks for the body from its first byte): a fresh
    /// stream when ``transportMaySendAgain(_:)``, otherwise one that fails when read, so that the copy is abandoned
    /// after its head, unfinished, instead of going out with the rest of the consumed stream (usually nothing) as
    /// its whole body. `nil` for a request with no body stream (a body of bytes the session sends again itself).
    static func renewedBodyStream(for request: URLRequest?) -> InputStream? {
        guard let request, let stream = request.httpBodyStream else { return nil }
        if transportMaySendAgain(request), let courierStream = stream as? UploadBodyStream {
            return courierStream.renewed()
        }
        return RefusedBodyStream()
    }

    /// The request to send again: `request` itself, or a copy with a fresh body stream when its body is one
    /// Courier streams. Call it only for a request that ``isReplayable(_:)``.
    static func fresh(_ request: URLRequest) -> URLRequest {
        guard let stream = request.httpBodyStream as? UploadBodyStream else { return request }
        var copy = request
        copy.httpBodyStream = stream.fresh()
        return copy
    }

    /// Returns the request to send again (with a fresh body stream, see ``fresh(_:)``), or throws
    /// ``CourierError/Code/bodyNotReplayable``.
    ///
    /// - Parameters:
    ///   - layer: Who wants to send it again, and why, for the error: `"retry after a 503"`.
    ///   - response: The response that made the layer want to send it again, if any; the error carries it.
    ///   - body: That response's body.
    ///   - underlying: The error that made the layer want to send it again, if any.
    /// - Throws: ``CourierError/Code/bodyNotReplayable`` when its body cannot be sent again.
    static func again(
        _ request: URLRequest,
        for layer: @autoclosure () -> String,
        response: HTTPURLResponse? = nil,
        body: Data? = nil,
        underlying: (any Error)? = nil
    ) throws -> URLRequest {
        guard !isReplayable(request) else { return fresh(request) }
        throw refusal(request, for: layer(), response: response, body: body, underlying: underlying)
    }

    /// The error for a request that `layer` would send again but cannot: it carries the response (or the
    /// status of the error) that made the layer want to.
    static func refusal(
        _ request: URLRequest,
        for layer: String,
        response: HTTPURLResponse? = nil,
        body: Data? = nil,
        underlying: (any Error)? = nil
    ) -> CourierError {
        var error = CourierError(
            .bodyNotReplayable,
            message: "\(layer) would send the request again, but "
                + ((request.httpBodyStream as? UploadBodyStream)?.source.whyNotReplayable
                    ?? "its body is an httpBodyStream, which can be read only once; give the request its body as "
                    + "Data (httpBody), or as a RequestBody that Courier can make again (.file, .stream, "
                    + ".multipart), so it can be sent again"),
            request: request,
            response: response,
            body: body,
            underlying: underlying
        )
        if response == nil, let failure = underlying as? CourierError {
            error.statusCode = failure.statusCode
            error.responseHeaders = failure.responseHeaders
            error.responseBody = failure.responseBody
            error.response = failure.response
        }
        return error
    }
}

/// A body stream that fails when read: what a session gets for a body it must not send again (see
/// ``Replay/renewedBodyStream(for:)``).
final class RefusedBodyStream: InputStream {
    // Not open until the session opens it, as a fresh stream is; failed from then on. Only the session's own queue
    // touches it.
    private var opened = false

    init() {
        super.init(data: Data())
    }

    override func open() { opened = true }

    override func close() {}

    override var streamStatus: Stream.Status { opened ? .error : .notOpen }

    override var streamError: (any Error)? {
        CourierError(.bodyNotReplayable, message: "the body was sent once and must not be sent again")
    }

    override var hasBytesAvailable: Bool { true }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int { -1 }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length: UnsafeMutablePointer<Int>
    ) -> Bool { false }
}
