import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// What a mock answers to one call: a response, an error to throw, a hang until cancelled, or a handler
/// that decides when the call comes.
///
/// The factories read like the HTTP they stand for:
///
/// ```swift
/// MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }
/// MockRoute.post("/login").replies(.status(401), then: .json(Token(value: "t1")))
/// MockRoute.get("/feed").replies(.serviceUnavailable(retryAfter: .seconds(2)), then: .ok)
/// MockRoute.get("/slow").replies(.ok.delayed(by: .seconds(3), on: clock))
/// MockRoute.get("/flaky").replies(.networkConnectionLost, then: .ok)
/// let down = MockTransport(.failure(URLError(.cannotConnectToHost)))
/// ```
public struct MockResponse: Sendable {
    enum Kind: Sendable {
        case response(status: Int, headers: [String: String], body: Data)
        case streamed(status: Int, headers: [String: String], chunks: [MockChunk])
        case failure(any Error)
        case hang
        case handler(MockHandler)
    }

    let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// A response with these parts; the factories below cover the common shapes.
    public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data()) {
        self.init(.response(status: status, headers: headers, body: body))
    }

    // MARK: Responses

    /// `200 OK` with an empty body.
    public static let ok = MockResponse(status: 200)

    /// `204 No Content`.
    public static let noContent = MockResponse(status: 204)

    /// `500 Internal Server Error` with an empty body.
    public static let serverError = MockResponse(status: 500)

    /// A response with the given status and an optional UTF-8 body.
    ///
    /// - Parameters:
    ///   - status: The status.
    ///   - body: The body's text.
    ///   - headers: The header fields.
    public static func status(_ status: Int, body: String = "", headers: [String: String] = [:]) -> MockResponse {
        MockResponse(status: status, headers: headers, body: Data(body.utf8))
    }

    /// A JSON response encoded from `value`, keys sorted so that bodies compare stably.
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - status: The status; `200` by default.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added unless given.
    public static func json(
        _ value: some Encodable,
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> MockResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a test fixture fails only for a programming error in the test itself.
        // swift-format-ignore: NeverUseForceTry
        let body = try! encoder.encode(value)
        return typed(body, "application/json", status: status, headers: headers)
    }

    /// A JSON response from JSON text, sent as written.
    ///
    /// - Parameters:
    ///   - json: The body's JSON text.
    ///   - status: The status; `200` by default.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added unless given.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> MockResponse {
        typed(Data(json.utf8), "application/json", status: status, headers: headers)
    }

    /// A plain-text response.
    ///
    /// - Parameters:
    ///   - text: The body.
    ///   - status: The status; `200` by default.
    ///   - headers: Extra header fields; `Content-Type: text/plain; charset=utf-8` is added unless given.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> MockResponse {
        typed(Data(text.utf8), "text/plain; charset=utf-8", status: status, headers: headers)
    }

    private static func typed(
        _ body: Data,
        _ contentType: String,
        status: Int,
        headers: [String: String]
    ) -> MockResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? contentType
        return MockResponse(status: status, headers: headers, body: body)
    }

    /// `401 Unauthorized` with a `WWW-Authenticate` challenge.
    ///
    /// - Parameter challenge: The `WWW-Authenticate` value.
    public static func unauthorized(challenge: String = "Bearer") -> MockResponse {
        .status(401, headers: ["WWW-Authenticate": challenge])
    }

    /// `503 Service Unavailable`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    public static func serviceUnavailable(retryAfter: Duration? = nil) -> MockResponse {
        MockResponse(status: 503, headers: retryAfterHeader(retryAfter))
    }

    /// `429 Too Many Requests`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    public static func tooManyRequests(retryAfter: Duration? = nil) -> MockResponse {
        MockResponse(status: 429, headers: retryAfterHeader(retryAfter))
    }

    /// A `Retry-After` field for `delay`, in whole seconds rounded up and never negative; none for `nil`.
    static func retryAfterHeader(_ delay: Duration?) -> [String: String] {
        guard let delay else { return [:] }
        let (seconds, attoseconds) = delay.components
        let whole = seconds < 0 ? 0 : Int(seconds) + (attoseconds > 0 ? 1 : 0)
        return ["Retry-After": String(whole)]
    }

    // MARK: Failures and handlers

    /// Throws `error` instead of answering, as a transport does when the network fails.
    ///
    /// - Parameter error: The error the call throws.
    public static func failure(_ error: any Error) -> MockResponse {
        MockResponse(.failure(error))
    }

    /// Throws `URLError(code)`, as URLSession does for a network failure.
    ///
    /// - Parameter code: The error code, for example `.timedOut` or `.cannotConnectToHost`.
    public static func urlError(_ code: URLError.Code) -> MockResponse {
        .failure(URLError(code))
    }

    /// Throws `URLError(.networkConnectionLost)`: the connection dropped before a response came.
    public static var networkConnectionLost: MockResponse { .urlError(.networkConnectionLost) }

    /// Throws `URLError(.timedOut)`.
    public static var timedOut: MockResponse { .urlError(.timedOut) }

    /// Never answers: the call waits until its task is cancelled, then throws `CancellationError`. The
    /// server that accepted the connection and went silent, for testing timeouts and hedging.
    public static var hang: MockResponse { MockResponse(.hang) }

    /// Asks `handler` for the answer when the call comes. The handler sees the request (with the path
    /// parameters a route captured and the call's index), may suspend on a ``Gate`` or a clock, and may throw.
    ///
    /// - Parameter handler: Decides the answer for one call.
    public static func handler(_ handler: @escaping MockHandler) -> MockResponse {
        MockResponse(.handler(handler))
    }

    /// A response whose body streams: the head is returned at once, and `chunks` run one by one as the caller
    /// reads the body (a call that does not stream gets them all, or the drop's error).
    ///
    /// ```swift
    /// MockRoute.get("/export").replies(.stream([.text("{\"id\":1}\n"), .delay(.seconds(1), on: clock), .drop()]))
    /// ```
    public static func stream(
        _ chunks: [MockChunk],
        status: Int = 200,
        headers: [String: String] = [:]
    ) -> MockResponse {
        MockResponse(.streamed(status: status, headers: headers, chunks: chunks))
    }

    /// A `text/event-stream` response whose body streams `events` (see ``MockChunk/event(_:type:id:retry:)``).
    public static func events(_ events: [MockChunk], status: Int = 200) -> MockResponse {
        .stream(events, status: status, headers: ["Content-Type": "text/event-stream"])
    }

    // MARK: Modifiers

    /// Returns this answer delayed by `duration` on `clock`.
    ///
    /// With a `ManualClock` the call stays in flight until the test advances the clock; cancelling the
    /// call ends the delay with `CancellationError`.
    ///
    /// ```swift
    /// MockRoute.get("/slow").replies(.json(user).delayed(by: .seconds(2), on: clock))
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long to wait before answering.
    ///   - clock: The clock to sleep on; `ContinuousClock` by default.
    public func delayed(by duration: Duration, on clock: some Clock<Duration> = ContinuousClock()) -> MockResponse {
        .handler { _ in
            try await clock.sleep(for: duration)
            return self
        }
    }

    /// Returns this answer held until `gate` opens, counting the call in `arrivals` (if given) when it
    /// starts to wait: a way to keep a number of calls in flight at once.
    ///
    /// ```swift
    /// let arrived = Arrivals(), release = Gate()
    /// let mock = MockTransport { MockRoute.get("/me").replies(.json(me).held(until: release, counting: arrived)) }
    /// // … start 50 calls …
    /// await arrived.wait(for: 50)
    /// release.open()
    /// ```
    ///
    /// - Parameters:
    ///   - gate: The gate to wait for. Cancelling the call ends the wait with `CancellationError`.
    ///   - arrivals: Counts each call as it starts to wait.
    public func held(until gate: Gate, counting arrivals: Arrivals? = nil) -> MockResponse {
        .handler { _ in
            arrivals?.arrive()
            try await gate.waitUnlessCancelled()
            return self
        }
    }

    /// Returns this answer with the header field `name` set to `value` (a handler's answers too); an error
    /// or a hang is left as it is.
    public func header(_ name: String, _ value: String) -> MockResponse {
        switch kind {
        case .response(let status, var headers, let body):
            headers[name] = value
            return MockResponse(status: status, headers: headers, body: body)
        case .streamed(let status, var headers, let chunks):
            headers[name] = value
            return .stream(chunks, status: status, headers: headers)
        case .failure, .hang:
            return self
        case .handler(let handler):
            return .handler { request in try await handler(request).header(name, value) }
        }
    }

    // MARK: Answering

    /// What a transport returns for `request`: the response, or the error thrown, after any delay, hold or
    /// handler. For a hand-written `Transport` in a test.
    ///
    /// - Parameter request: The request being answered.
    /// - Returns: The body and the `HTTPURLResponse`.
    /// - Throws: The answer's error, or `CancellationError` for a hang or a cancelled wait.
    public func httpResponse(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await resolve(for: MockRequest(request))
    }

    /// Turns the answer into what a transport returns, or throws.
    func resolve(for request: MockRequest) async throws -> (Data, HTTPURLResponse) {
        let (body, response) = try await resolveHead(for: request)
        switch body {
        case .whole(let data):
            return (data, response)
        case .chunks(let chunks):
            return (try await ScriptedBody(steps: chunks).collect(), response)
        }
    }

    /// Turns the answer into what a streaming transport returns, or throws: a streamed answer's steps run as
    /// the body is read.
    func resolveStream(for request: MockRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        let (body, response) = try await resolveHead(for: request)
        switch body {
        case .whole(let data):
            return (StreamedBody(data), response)
        case .chunks(let chunks):
            return (StreamedBody(ScriptedBody(steps: chunks)), response)
        }
    }

    private enum Body {
        case whole(Data)
        case chunks([MockChunk])
    }

    /// The head of the answer and its body, after any delay, hold or handler; or the answer's error.
    private func resolveHead(for request: MockRequest) async throws -> (Body, HTTPURLResponse) {
        var answer = self
        while true {
            switch answer.kind {
            case .response(let status, let headers, let body):
                return (.whole(body), Self.head(status: status, headers: headers, for: request))
            case .streamed(let status, let headers, let chunks):
                return (.chunks(chunks), Self.head(status: status, headers: headers, for: request))
            case .failure(let error):
                throw error
            case .hang:
                try await waitForCancellation()
                fatalError("unreachable: waitForCancellation only returns by throwing")
            case .handler(let handler):
                try Task.checkCancellation()
                answer = try await handler(request)
            }
        }
    }

    private static func head(status: Int, headers: [String: String], for request: MockRequest) -> HTTPURLResponse {
        let url = request.urlRequest.url ?? URL(string: "http://127.0.0.1/")!
        // HTTPURLResponse's initializer only fails for an invalid HTTP version, which is fixed here.
        // swift-format-ignore: NeverForceUnwrap
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }
}

/// A handler decides a mock's answer when a call comes: it gets the request, may suspend (on a ``Gate`` or a
/// clock) and may throw. ``MockTransport/init(_:)``, the ``MockRoute`` spellings and
/// ``MockResponse/handler(_:)`` take one.
public typealias MockHandler = @Sendable (MockRequest) async throws -> MockResponse
