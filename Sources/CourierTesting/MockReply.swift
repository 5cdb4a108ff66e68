public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a mock does for one call: return a response, throw an error, hang until cancelled, or decide
/// from the request.
///
/// Replies are written with the factories, which read like the HTTP they stand for:
///
/// ```swift
/// MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }
/// MockRoute.post("/login").replies(.status(401), then: .json(Token(value: "t1")))
/// MockRoute.get("/feed").replies(.serviceUnavailable(retryAfter: .seconds(2)), then: .ok)
/// MockRoute.get("/slow").replies(.ok.delayed(by: .seconds(3), on: clock))
/// MockRoute.get("/flaky").replies(.networkConnectionLost, then: .ok)
/// ```
///
/// `MockTransport.Reply` is another name for this type.
public enum MockReply: Sendable {
    /// Return this response.
    case response(MockResponse)
    /// Throw this error.
    case failure(any Error)
    /// Wait until the calling task is cancelled, then throw `CancellationError`.
    case hang
    /// Ask a closure for the reply, when the call happens. The closure may suspend (to wait on a ``Gate``
    /// or sleep on a clock) and may throw.
    case handler(@Sendable (MockRequest) async throws -> MockReply)

    // MARK: Responses

    /// `200 OK` with an empty body.
    public static var ok: MockReply { .response(.ok) }

    /// `204 No Content`.
    public static var noContent: MockReply { .response(.noContent) }

    /// `500 Internal Server Error` with an empty body.
    public static var serverError: MockReply { .response(.serverError) }

    /// A response with the given status and an optional text body.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - body: A UTF-8 body.
    ///   - headers: The header fields.
    /// - Returns: The reply.
    public static func status(_ status: Int, body: String = "", headers: [String: String] = [:]) -> MockReply {
        .response(.status(status, body: body, headers: headers))
    }

    /// A JSON response encoded from `value` (keys sorted, so bodies compare stably).
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added.
    /// - Returns: The reply.
    public static func json(_ value: some Encodable, status: Int = 200, headers: [String: String] = [:]) -> MockReply {
        .response(.json(value, status: status, headers: headers))
    }

    /// A JSON response from JSON text.
    ///
    /// - Parameters:
    ///   - json: The JSON text.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: application/json` is added.
    /// - Returns: The reply.
    public static func json(_ json: String, status: Int = 200, headers: [String: String] = [:]) -> MockReply {
        .response(.json(json, status: status, headers: headers))
    }

    /// A plain-text response.
    ///
    /// - Parameters:
    ///   - text: The body.
    ///   - status: The status code.
    ///   - headers: Extra header fields; `Content-Type: text/plain; charset=utf-8` is added.
    /// - Returns: The reply.
    public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> MockReply {
        .response(.text(text, status: status, headers: headers))
    }

    /// A response with a raw body.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - status: The status code.
    ///   - headers: The header fields.
    /// - Returns: The reply.
    public static func data(_ data: Data, status: Int = 200, headers: [String: String] = [:]) -> MockReply {
        .response(MockResponse(status: status, headers: headers, body: data))
    }

    /// `401 Unauthorized` with a `WWW-Authenticate` challenge.
    ///
    /// - Parameter challenge: The `WWW-Authenticate` value.
    /// - Returns: The reply.
    public static func unauthorized(challenge: String = "Bearer") -> MockReply {
        .status(401, headers: ["WWW-Authenticate": challenge])
    }

    /// `503 Service Unavailable`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    /// - Returns: The reply.
    public static func serviceUnavailable(retryAfter: Duration? = nil) -> MockReply {
        .response(.serviceUnavailable(retryAfter: retryAfter))
    }

    /// `429 Too Many Requests`, with a `Retry-After` header when `retryAfter` is given.
    ///
    /// - Parameter retryAfter: The delay to announce, sent in whole seconds (rounded up).
    /// - Returns: The reply.
    public static func tooManyRequests(retryAfter: Duration? = nil) -> MockReply {
        .response(.tooManyRequests(retryAfter: retryAfter))
    }

    // MARK: Failures

    /// Throws `URLError(code)`, as URLSession does for a network failure.
    ///
    /// - Parameter code: The error code, for example `.timedOut` or `.cannotConnectToHost`.
    /// - Returns: The reply.
    public static func urlError(_ code: URLError.Code) -> MockReply {
        .failure(URLError(code))
    }

    /// Throws `URLError(.networkConnectionLost)`: the connection dropped before a response came.
    public static var networkConnectionLost: MockReply { .urlError(.networkConnectionLost) }

    /// Throws `URLError(.timedOut)`.
    public static var timedOut: MockReply { .urlError(.timedOut) }

    // MARK: Modifiers

    /// Returns this reply delayed by `duration` on `clock`.
    ///
    /// With a `ManualClock` the call stays in flight until the test advances the clock; cancelling the
    /// call ends the delay with `CancellationError`.
    ///
    /// ```swift
    /// MockRoute.get("/slow").replies(.json(user).delayed(by: .seconds(2), on: clock))
    /// ```
    ///
    /// - Parameters:
    ///   - duration: How long to wait before replying.
    ///   - clock: The clock to sleep on; `ContinuousClock` by default.
    /// - Returns: The delayed reply.
    public func delayed(by duration: Duration, on clock: some Clock<Duration> = ContinuousClock()) -> MockReply {
        let reply = self
        return .handler { _ in
            try await clock.sleep(for: duration)
            return reply
        }
    }

    /// Returns this reply held until `gate` opens, counting the call in `arrivals` (if given) when it
    /// starts to wait. Use it to keep a number of calls in flight at once.
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
    /// - Returns: The held reply.
    public func held(until gate: Gate, counting arrivals: Arrivals? = nil) -> MockReply {
        let reply = self
        return .handler { _ in
            arrivals?.arrive()
            try await gate.waitUnlessCancelled()
            return reply
        }
    }

    /// Returns this reply with a header field added to the response. Failures are left as they are.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value.
    /// - Returns: The changed reply.
    public func header(_ name: String, _ value: String) -> MockReply {
        switch self {
        case .response(let response):
            return .response(response.header(name, value))
        case .failure, .hang:
            return self
        case .handler(let handler):
            return .handler { request in try await handler(request).header(name, value) }
        }
    }
}

extension MockReply {
    /// Turns the reply into what a transport returns, or throws.
    func resolve(for request: MockRequest) async throws -> (Data, HTTPURLResponse) {
        var reply = self
        while true {
            switch reply {
            case .response(let response):
                return response.httpResponse(for: request.urlRequest)
            case .failure(let error):
                throw error
            case .hang:
                try await waitForCancellation()
                fatalError("unreachable: waitForCancellation only returns by throwing")
            case .handler(let handler):
                try Task.checkCancellation()
                reply = try await handler(request)
            }
        }
    }
}
