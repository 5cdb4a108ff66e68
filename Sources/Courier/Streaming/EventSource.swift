public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A Server-Sent Events stream that reconnects: what ``Client/events(_:reconnection:idleTimeout:maximumEventSize:clock:)`` returns.
///
/// ```swift
/// for try await event in client.events(.get("/v1/notifications"), idleTimeout: .seconds(45)) {
///     switch event.type {
///     case "notification": try handle(event.data)
///     default: continue
///     }
/// }
/// ```
///
/// Each connection is a ``Client/stream(_:idleTimeout:totalTimeout:clock:)-(Request<Data>,_,_,_)`` call, so it
/// goes through the client's middleware: an expired token is refreshed (once, however many streams meet the
/// 401 together), the request counts, a `.timeout` bounds the wait for the head. The events are read as the
/// WHATWG EventSource reads them (see ``ServerSentEventSequence``).
///
/// **Reconnecting.** When the connection ends (the server closes it, it is lost, or no byte arrives within the
/// idle timeout), the stream connects again after the server's `retry:` delay (or the policy's), with the last
/// event ID in `Last-Event-ID`, and goes on with the events of the new connection. A `5xx` or `429` answer
/// (``Reconnection/retryableStatuses``) is retried the same way, after its `Retry-After` when it has one
/// (at most ``Reconnection/maximumDelay``). After ``Reconnection/maximumAttempts`` connections in a row that
/// failed before an event arrived, the last error is thrown.
///
/// **A request that is not idempotent is sent once.** A `POST` or `PATCH` — an LLM's streamed completion, whose
/// every sending is a new, billed completion — is never sent again without an idempotency key: its stream
/// ends with its connection. When the server closes it, the loop finishes (that is how an LLM stream ends);
/// when it is lost, or answered with a retryable status, the error is thrown. A request that carries an
/// `Idempotency-Key` header of its own reconnects as a `GET` does, with the same key (the rule is the retry's,
/// ``RetryPolicy/retriesNonIdempotentRequests`` aside). A key that ``Middleware/idempotencyKey(header:methods:generate:)``
/// adds does not count: each connection is a new call, which it gives a new key. An empty or blank key is no
/// key. A request whose body can be read only once (a multipart form with a
/// ``MultipartForm/Part/stream(_:once:length:filename:contentType:)`` part) is sent once too, whatever its method.
///
/// **Ending.** A `204 No Content` ends the stream (the loop finishes). Any other status throws, and a `2xx`
/// that is not `text/event-stream` throws ``CourierError/Code/unacceptableContentType``. Cancelling the
/// consuming task, or leaving the loop, closes the connection.
public struct EventSource: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent
    /// ``CourierError``, or `CancellationError`.
    public typealias Failure = any Error

    /// When and how often the stream connects again.
    public struct Reconnection: Sendable {
        /// The delay before connecting again when the server set none with `retry:`; 3 seconds by default.
        public var delay: Duration
        /// The longest delay honoured, whatever the server's `retry:` says; 60 seconds by default.
        public var maximumDelay: Duration
        /// How many connections in a row may fail before an event arrives before the error is thrown; 5 by
        /// default. A connection that delivered an event resets the count.
        public var maximumAttempts: Int
        /// The statuses that are retried like a lost connection: `429`, `500`, `502`, `503`, `504` by default.
        public var retryableStatuses: Set<Int>

        /// - Parameters:
        ///   - delay: The delay when the server set none.
        ///   - maximumDelay: The longest delay honoured.
        ///   - maximumAttempts: Failed connections in a row before the error is thrown; at least 1.
        ///   - retryableStatuses: Statuses retried like a lost connection.
        public init(
            delay: Duration = .seconds(3),
            maximumDelay: Duration = .seconds(60),
            maximumAttempts: Int = 5,
            retryableStatuses: Set<Int> = [429, 500, 502, 503, 504]
        ) {
            precondition(maximumAttempts >= 1, "an event source needs at least 1 attempt")
            self.delay = delay
            self.maximumDelay = maximumDelay
            self.maximumAttempts = maximumAttempts
            self.retryableStatuses = retryableStatuses
        }

        /// The defaults above.
        public static var `default`: Reconnection { Reconnection() }

        /// Never connect again: the first end or failure ends the stream (an end finishes the loop, a failure
        /// throws).
        public static var never: Reconnection { Reconnection(maximumAttempts: 1, retryableStatuses: []) }

        /// Whether `never`: the stream ends with its first connection.
        var reconnects: Bool { maximumAttempts > 1 || !retryableStatuses.isEmpty }
    }

    typealias Connect = @Sendable (Request<Data>) async throws -> (body: StreamedBody, response: HTTPURLResponse)

    let request: Request<Data>
    /// The reconnection asked for, or ``Reconnection/never`` for a request that may not be sent again.
    let reconnection: Reconnection
    let maximumEventSize: Int
    let connect: Connect
    let sleep: @Sendable (Duration) async throws -> Void

    init(
        request: Request<Data>,
        reconnection: Reconnection,
        maximumEventSize: Int,
        connect: @escaping Connect,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.request = request
        let mayBeSentAgain = RetryPolicy(budget: nil).allowsSendingAgain(method: request.method.rawValue) {
            request.headers[$0]
        }
        // Nor is a request whose body can be read only once: its second connection would fail in the body.
        self.reconnection = mayBeSentAgain && (request.body?.isReplayable ?? true) ? reconnection : .never
        self.maximumEventSize = maximumEventSize
        self.connect = connect
        self.sleep = sleep
    }

    /// Whether `type`, a `Content-Type` value, is `text/event-stream`: the media type in any ASCII case, with or
    /// without parameters, between spaces and tabs only. Byte by byte: Foundation's case-insensitive comparison
    /// folds Unicode, so `text/event-ſtream` (a long s) would pass, and its whitespace includes more than HTTP's.
    static func isEventStream(_ type: String) -> Bool {
        let expected = Array("text/event-stream".utf8)
        var bytes = Array(type.utf8.prefix { $0 != UInt8(ascii: ";") })
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        let start = bytes.firstIndex { $0 != 0x20 && $0 != 0x09 } ?? bytes.endIndex
        let mediaType = bytes[start...]
        guard mediaType.count == expected.count else { return false }
        return zip(mediaType, expected).allSatisfy { byte, lower in
            byte == lower || (byte >= 0x41 && byte <= 0x5A && byte | 0x20 == lower)
        }
    }

    /// Starts the stream: the first connection is made by the first `next()`.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: self)
    }

    /// Reads events, connecting and reconnecting as needed.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let source: EventSource
        var events: ServerSentEventSequence<StreamedBody>.AsyncIterator?
        var body: StreamedBody?
        var lastEventID = ""
        var reconnectionTime: Duration?
        /// The delay a retryable status's `Retry-After` asked for, until the next connection.
        var retryAfter: Duration?
        /// Connections in a row that ended or failed before an event arrived.
        var failures = 0
        var isFinished = false
        var isFirstConnection = true

        init(source: EventSource) {
            self.source = source
        }

        /// The next event, or `nil` once the server answered `204` (or closed the stream of a request that is
        /// not sent again).
        ///
        /// - Throws: The error of the last connection once reconnecting gives up (at once for a request that is
        ///   not sent again), ``CourierError/Code/unacceptableStatus`` for a status that is neither `2xx` nor
        ///   retryable, ``CourierError/Code/unacceptableContentType`` for a `2xx` that is not
        ///   `text/event-stream`, or `CancellationError`.
        public mutating func next() async throws -> ServerSentEvent? {
            while !isFinished {
                if events == nil {
                    try await open()
                    continue
                }
                do {
                    // swift-format-ignore: NeverForceUnwrap
                    if let event = try await events!.next() {
                        failures = 0
                        return event
                    }
                    // The server closed the connection: connect again, as a browser does.
                    try endConnection(after: nil)
                } catch {
                    try endConnection(after: error)
                }
            }
            return nil
        }

        /// Ends the current connection, keeping its last event ID and reconnection time; rethrows `error` when the
        /// stream should not connect again.
        private mutating func endConnection(after error: (any Error)?) throws {
            if let parser = events?.eventParser {
                lastEventID = parser.lastEventID
                reconnectionTime = parser.reconnectionTime
            }
            events = nil
            body?.cancel()
            body = nil
            if let error {
                // A connection cut mid-body is a transport error (Courier's transports say "the connection … was
                // lost during the response body", whatever their client reported), not always a transient one; a
                // transport of someone else's may throw its client's error as it is. The body's own failures (an
                // event too large, say) are CourierErrors with other codes.
                let isLostConnection =
                    RetryPolicy.isTransient(error) || (error as? CourierError).map { $0.code == .transport } ?? true
                guard !(error is CancellationError), !Task.isCancelled, isLostConnection else {
                    isFinished = true
                    throw error
                }
            }
            failures += 1
            guard failures < source.reconnection.maximumAttempts else {
                isFinished = true
                if let error { throw error }
                return
            }
        }

        /// Connects (after the reconnection delay, unless it is the first connection).
        private mutating func open() async throws {
            if !isFirstConnection {
                let delay = Swift.min(
                    retryAfter ?? reconnectionTime ?? source.reconnection.delay,
                    source.reconnection.maximumDelay
                )
                retryAfter = nil
                do {
                    try await source.sleep(delay)
                } catch {
                    isFinished = true
                    throw error
                }
            }
            isFirstConnection = false
            var request = source.request
            request.headers["Accept"] = "text/event-stream"
            request.headers["Cache-Control"] = "no-store"
            if !lastEventID.isEmpty { request.headers["Last-Event-ID"] = lastEventID }
            let body: StreamedBody
            let response: HTTPURLResponse
            do {
                (body, response) = try await source.connect(request)
            } catch let error as CourierError
                where error.code == .unacceptableStatus
                && source.reconnection.retryableStatuses.contains(error.statusCode ?? 0)
            {
                if let value = error.responseHeaders.first(where: { $0.key.lowercased() == "retry-after" })?.value {
                    retryAfter = RetryAfter.delay(value, now: Date())
                }
                try countFailure(error)
                return
            } catch let error where RetryPolicy.isTransient(error) && !(error is CancellationError) {
                try countFailure(error)
                return
            } catch {
                isFinished = true
                throw error
            }
            if response.statusCode == 204 {
                body.cancel()
                isFinished = true
                return
            }
            let type = response.value(forHTTPHeaderField: "Content-Type") ?? ""
            guard EventSource.isEventStream(type) else {
                body.cancel()
                isFinished = true
                throw CourierError(
                    .unacceptableContentType,
                    message:
                        "the event stream's response is \(type.isEmpty ? "without a Content-Type" : "of type \(type)"), "
                        + "not text/event-stream",
                    request: try? source.request.urlRequest(baseURL: nil, encoder: JSONEncoder()),
                    response: response
                )
            }
            self.body = body
            let parser = ServerSentEventParser(
                maximumEventSize: source.maximumEventSize,
                lastEventID: lastEventID,
                reconnectionTime: reconnectionTime
            )
            events = ServerSentEventSequence(body, parser: parser).makeAsyncIterator()
        }

        private mutating func countFailure(_ error: any Error) throws {
            failures += 1
            guard failures < source.reconnection.maximumAttempts else {
                isFinished = true
                throw error
            }
        }
    }
}

extension Client {
    /// A Server-Sent Events stream from `request`, which reconnects with `Last-Event-ID` after the connection
    /// drops; see ``EventSource``.
    ///
    /// ```swift
    /// for try await event in client.events(.get("/v1/chat/stream")) {
    ///     print(event.type, event.data)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request of each connection; `Accept: text/event-stream`, `Cache-Control: no-store` and,
    ///     on reconnecting, `Last-Event-ID` are set on it.
    ///   - reconnection: When to connect again; ``EventSource/Reconnection/never`` for a single connection.
    ///   - idleTimeout: The longest the stream may wait for a byte before the connection counts as lost (and
    ///     is made again); `nil` for no limit. Servers that send a comment line as a heartbeat suit this well.
    ///   - maximumEventSize: The most bytes of one line, or of one event's data; 1 MiB by default.
    ///   - clock: The clock of the idle timeout and the reconnection delay.
    public nonisolated func events<C: Clock<Duration>>(
        _ request: Request<Data>,
        reconnection: EventSource.Reconnection = .default,
        idleTimeout: Duration? = nil,
        maximumEventSize: Int = 1024 * 1024,
        clock: C = ContinuousClock()
    ) -> EventSource {
        EventSource(
            request: request,
            reconnection: reconnection,
            maximumEventSize: maximumEventSize,
            connect: { [self] request in try await stream(request, idleTimeout: idleTimeout, clock: clock) },
            sleep: { try await clock.sleep(for: $0) }
        )
    }
}

extension StreamedBody {
    /// The body's lines (ended by `LF` or `CRLF`); see ``LineSequence``.
    public var lines: LineSequence<StreamedBody> { LineSequence(self) }

    /// The body's Server-Sent Events, from this one connection (it does not reconnect; for that, use
    /// ``Client/events(_:reconnection:idleTimeout:maximumEventSize:clock:)``); see ``ServerSentEventSequence``.
    public var serverSentEvents: ServerSentEventSequence<StreamedBody> { ServerSentEventSequence(self) }

    /// The body's JSON Lines (NDJSON), each decoded as `type`; see ``JSONLineSequence``.
    public func jsonLines<Value: Decodable>(
        of type: Value.Type,
        decoder: JSONDecoder = JSONDecoder()
    ) -> JSONLineSequence<StreamedBody, Value> {
        JSONLineSequence(self, of: type, decoder: decoder)
    }
}
