public import Courier
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A `Transport` that plays an API in memory: it answers from routes, a handler or a script of
/// responses, records what it was sent, and checks how often each route was called.
///
/// ```swift
/// let api = MockTransport {                                        // routed, see MockRoute
///     MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }
///     MockRoute.post("/login").replies(.status(401), then: .json(token)).expectCalls(2)
/// }
/// let custom = MockTransport { request in .json(["path": request.path]) }   // a handler decides
/// let flaky = MockTransport(.status(503), then: .json(user))         // a script: 503, then 200 for good
/// let down = MockTransport(.failure(URLError(.notConnectedToInternet)))
/// let ok = MockTransport.ok                                          // every request: 200
/// ```
///
/// Like the real transports, the mock refuses a request that could not be sent safely (see
/// `RequestValidation`) with `CourierError.Code.invalidRequest`, and does not record it.
///
/// A routed mock answers a request with the first route that matches (see ``MockRoute``); a request that
/// matches no route fails with a ``MockTransportError`` that lists the routes, and is reported by
/// ``unmetExpectations`` — unless you give an `unmatched` answer, such as `.status(404)`.
///
/// Every mock records the requests it receives (see ``RequestRecording``), so tests can check what was
/// sent: `#expect(api.lastRequest?.header("Authorization") == "Bearer t2")`.
///
/// In a Swift Testing suite, the `.mockTransport` trait makes a fresh mock for each test and installs
/// it as ``MockTransport/current`` and ``TestTransport/current``; see ``TestTransport``.
public final class MockTransport: Transport, RequestRecording {
    /// The mock installed for the current task by the `.mockTransport` test trait or by
    /// ``withTestTransport(_:isolation:operation:)``, or `nil`.
    @TaskLocal public static var current: MockTransport?

    private enum Responder: Sendable {
        case script(MockResponse)
        case routes([MockRoute], unmatched: MockResponse?)
    }

    private struct State {
        var requests: [URLRequest] = []
        var cancellations = 0
        var position = 0
        var routeCalls: [Int]
        var unmatched: [URLRequest] = []
    }

    private let responder: Responder
    private let state: LockedState<State>

    private init(responder: Responder) {
        self.responder = responder
        if case .routes(let routes, _) = responder {
            state = LockedState(State(routeCalls: Array(repeating: 0, count: routes.count)))
        } else {
            state = LockedState(State(routeCalls: []))
        }
    }

    /// Creates a mock that answers the first call with `first`, the next ones with each of `rest` in turn,
    /// and every later call with the last answer.
    ///
    /// - Parameters:
    ///   - first: The answer to the first call, and to every call when `rest` is empty.
    ///   - rest: The answers to the next calls.
    public convenience init(_ first: MockResponse, then rest: MockResponse...) {
        guard !rest.isEmpty else {
            self.init(responder: .script(first))
            return
        }
        let script = [first] + rest
        self.init(responder: .script(.handler { request in script[min(request.callIndex, script.count - 1)] }))
    }

    /// Creates a mock whose handler decides every answer; the request's ``MockRequest/callIndex`` counts
    /// the mock's calls.
    ///
    /// - Parameter handler: Returns the answer for a request, or throws.
    public convenience init(_ handler: @escaping MockHandler) {
        self.init(.handler(handler))
    }

    /// Creates a mock that answers by method and path, from routes written one per line.
    ///
    /// ```swift
    /// let api = MockTransport(unmatched: .status(404)) {
    ///     MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }
    ///     MockRoute.post("/users").replies(.status(201)).expectCalls(1)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - unmatched: The answer to a request no route matches; `nil` (the default) throws a
    ///     ``MockTransportError`` and reports the request in ``unmetExpectations``.
    ///   - routes: The routes, tried in order.
    public convenience init(unmatched: MockResponse? = nil, @MockRouteBuilder routes: () -> [MockRoute]) {
        self.init(routes: routes(), unmatched: unmatched)
    }

    convenience init(routes: [MockRoute], unmatched: MockResponse?) {
        self.init(responder: .routes(routes, unmatched: unmatched))
    }

    /// Every request received, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// How many requests were received.
    public var callCount: Int { state.withLock { $0.requests.count } }

    /// How many calls were cancelled while the mock was answering them.
    public var cancellationCount: Int { state.withLock { $0.cancellations } }

    /// The routes of a routed mock, in order; empty for a scripted one.
    public var routes: [MockRoute] {
        if case .routes(let routes, _) = responder { return routes }
        return []
    }

    /// How many calls each of ``routes`` answered, in the same order.
    public var routeCallCounts: [Int] { state.withLock { $0.routeCalls } }

    /// The requests that matched no route, in order.
    public var unmatchedRequests: [URLRequest] { state.withLock { $0.unmatched } }

    /// What the test expected and did not get: routes called too few or too many times (see
    /// ``MockRoute/expectCalls(_:fileID:filePath:line:column:)-(Int,_,_,_,_)``) and requests that matched no
    /// route (when the mock has no `unmatched` answer). Empty when all is well.
    ///
    /// ```swift
    /// #expect(api.unmetExpectations.isEmpty)
    /// ```
    public var unmetExpectations: [String] { expectationFailures.map(\.message) }

    /// One unmet expectation: the message, and the route's index in ``routes`` (`nil` for an unmatched
    /// request).
    struct ExpectationFailure {
        let message: String
        let routeIndex: Int?
    }

    var expectationFailures: [ExpectationFailure] {
        guard case .routes(let routes, let unmatchedResponse) = responder else { return [] }
        let (calls, unmatched) = state.withLock { ($0.routeCalls, $0.unmatched) }
        var failures: [ExpectationFailure] = []
        for (index, (route, count)) in zip(routes, calls).enumerated() {
            guard let expected = route.expectedCalls, !expected.contains(count) else { continue }
            let got = count == 1 ? "1 call" : "\(count) calls"
            failures.append(
                ExpectationFailure(
                    message: "\(route) expected \(MockRoute.describe(expected)), got \(got)",
                    routeIndex: index
                )
            )
        }
        if unmatchedResponse == nil {
            for request in unmatched {
                let message = "unexpected request \(request.summary): no route matches"
                failures.append(ExpectationFailure(message: message, routeIndex: nil))
            }
        }
        return failures
    }

    /// Forgets the recorded requests and resets the call counts of the routes and of a scripted sequence.
    public func reset() {
        state.withLock { state in
            state = State(routeCalls: Array(repeating: 0, count: state.routeCalls.count))
        }
    }

    /// Answers `request` from the routes, the handler or the script.
    ///
    /// - Returns: The scripted response.
    /// - Throws: The scripted error, ``MockTransportError`` for a request no route matches,
    ///   `CancellationError`, or `CourierError` (`.invalidRequest`) for a request that could not be sent
    ///   safely.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await answer(request) { response, mockRequest in try await response.resolve(for: mockRequest) }
    }

    /// Answers `request` as ``send(_:)`` does, with a ``MockResponse/stream(_:status:headers:)`` answer's body
    /// streaming step by step as it is read.
    public func stream(_ request: URLRequest) async throws -> (StreamedBody, HTTPURLResponse) {
        try await answer(request) { response, mockRequest in try await response.resolveStream(for: mockRequest) }
    }

    private func answer<Result>(
        _ request: URLRequest,
        with resolve: (MockResponse, MockRequest) async throws -> Result
    ) async throws -> Result {
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        let call = state.withLock { state in
            state.requests.append(request)
            defer { state.position += 1 }
            return state.position
        }
        do {
            try Task.checkCancellation()
            switch responder {
            case .script(let response):
                return try await resolve(response, MockRequest(request, callIndex: call))
            case .routes(let routes, let unmatched):
                let (response, mockRequest) = try choose(request, routes: routes, unmatched: unmatched)
                return try await resolve(response, mockRequest)
            }
        } catch is CancellationError {
            recordCancellation()
            throw CancellationError()
        }
    }

    private func choose(
        _ request: URLRequest,
        routes: [MockRoute],
        unmatched: MockResponse?
    ) throws -> (MockResponse, MockRequest) {
        // Conditions are the test's own closures: run them outside the lock.
        for (index, route) in routes.enumerated() {
            guard let parameters = route.match(request) else { continue }
            let callIndex = state.withLock { state in
                defer { state.routeCalls[index] += 1 }
                return state.routeCalls[index]
            }
            let response = route.replies[min(callIndex, route.replies.count - 1)]
            return (response, MockRequest(request, parameters: parameters, callIndex: callIndex))
        }
        let calls = state.withLock { state in
            state.unmatched.append(request)
            return state.routeCalls
        }
        if let unmatched {
            return (unmatched, MockRequest(request))
        }
        throw MockTransportError(message: Self.unmatchedMessage(request, routes: routes, calls: calls))
    }

    private static func unmatchedMessage(_ request: URLRequest, routes: [MockRoute], calls: [Int]) -> String {
        var lines = ["MockTransport: no route matches \(request.summary)"]
        let headers = request.redactedHeaderSummary
        if !headers.isEmpty { lines.append("  headers: \(headers)") }
        if routes.isEmpty {
            lines.append("  the mock has no routes")
        } else {
            lines.append("  routes:")
            for (route, count) in zip(routes, calls) {
                lines.append("    \(route) — called \(count == 1 ? "once" : "\(count) times")")
            }
        }
        return lines.joined(separator: "\n")
    }

    private func recordCancellation() {
        state.withLock { $0.cancellations += 1 }
    }

    /// Shortcut: every request gets `200 OK` with an empty body.
    public static var ok: MockTransport { MockTransport(.ok) }
}

/// The error the testing kit throws for a request a mock cannot answer (no route matches, no transport
/// installed, no body to decode).
public struct MockTransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// - Parameter message: What went wrong.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// Suspends until the current task is cancelled, then throws `CancellationError`.
///
/// - Throws: `CancellationError`, always.
public func waitForCancellation() async throws {
    let gate = Gate()
    await withTaskCancellationHandler {
        await gate.wait()
    } onCancel: {
        gate.open()
    }
    throw CancellationError()
}
