public import Courier
public import Foundation
import Synchronization

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A ``Transport`` that answers from a script instead of the network, and records what it was sent.
///
/// ```swift
/// let transport = MockTransport.ok                                  // every request: 200
/// let flaky = MockTransport(sequence: [.response(.status(503)), .response(.json(user))])
/// let routed = MockTransport(routes: [
///     .init(.get, "/users/42", .response(.json(user))),
///     .init(.post, "/users", .response(.status(201))),
/// ])
/// let failing = MockTransport(error: URLError(.notConnectedToInternet))
/// let custom = MockTransport { request in .json(["path": request.url!.path]) }
/// ```
///
/// Like the real transports, the mock refuses a request that could not be sent safely (see
/// `RequestValidation`) with `CourierError.Code.invalidRequest`, and does not record it.
///
/// A scripted sequence answers the calls in order and repeats its last reply once it runs out. A routed
/// mock answers a request with the first route whose method and path match; a request that matches no
/// route fails with an error that lists the routes.
public final class MockTransport: Transport {
    /// What the mock does for one call.
    public enum Reply: Sendable {
        /// Return this response.
        case response(MockResponse)
        /// Throw this error.
        case failure(any Error)
        /// Wait until the calling task is cancelled, then throw `CancellationError`.
        case hang
    }

    /// A reply for requests with a given method and path.
    public struct Route: Sendable {
        /// The method to match, or `nil` for any.
        public var method: HTTPMethod?
        /// The URL path to match exactly (without query).
        public var path: String
        /// The reply.
        public var reply: Reply

        /// Creates a route.
        ///
        /// - Parameters:
        ///   - method: The method to match, or `nil` for any.
        ///   - path: The URL path to match exactly.
        ///   - reply: The reply.
        public init(_ method: HTTPMethod?, _ path: String, _ reply: Reply) {
            self.method = method
            self.path = path
            self.reply = reply
        }
    }

    private struct State {
        var requests: [URLRequest] = []
        var cancellations = 0
        var position = 0
    }

    private let responder: @Sendable (URLRequest, Int) async throws -> Reply
    private let state = Mutex(State())

    /// Creates a mock that answers each request with a closure's response.
    ///
    /// - Parameter handler: Returns the response for a request, or throws.
    public init(_ handler: @escaping @Sendable (URLRequest) async throws -> MockResponse) {
        responder = { request, _ in .response(try await handler(request)) }
    }

    /// Creates a mock that gives every request the same reply.
    ///
    /// - Parameter reply: The reply.
    public init(reply: Reply) {
        responder = { _, _ in reply }
    }

    /// Creates a mock that gives every request the same response.
    ///
    /// - Parameter response: The response.
    public convenience init(_ response: MockResponse) {
        self.init(reply: .response(response))
    }

    /// Creates a mock whose every call throws `error`.
    ///
    /// - Parameter error: The error.
    public convenience init(error: any Error) {
        self.init(reply: .failure(error))
    }

    /// Creates a mock that answers calls with `replies` in order, repeating the last one when it runs out.
    ///
    /// - Parameter replies: The replies; must not be empty.
    public init(sequence replies: [Reply]) {
        precondition(!replies.isEmpty, "a scripted MockTransport needs at least one reply")
        responder = { _, call in replies[min(call, replies.count - 1)] }
    }

    /// Creates a mock that answers by method and path.
    ///
    /// - Parameter routes: The routes, tried in order.
    public init(routes: [Route]) {
        responder = { request, _ in
            let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
            let path = request.url?.path ?? ""
            if let route = routes.first(where: { ($0.method == nil || $0.method == method) && $0.path == path }) {
                return route.reply
            }
            let known = routes.map { "\($0.method?.rawValue ?? "*") \($0.path)" }.joined(separator: ", ")
            return .failure(MockTransportError(message: "no route for \(method) \(path); routes: \(known)"))
        }
    }

    /// Every request received, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// How many requests were received.
    public var callCount: Int { state.withLock { $0.requests.count } }

    /// How many calls were cancelled while the mock was answering them.
    public var cancellationCount: Int { state.withLock { $0.cancellations } }

    /// Answers `request` from the script.
    ///
    /// - Parameter request: The request.
    /// - Returns: The scripted response.
    /// - Throws: The scripted error, `CancellationError`, or `CourierError` (`.invalidRequest`) for a request
    ///   that could not be sent safely.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // Like the real transports, refuse what could not be sent safely; such a request is not recorded.
        try RequestValidation.validate(request)
        let call = state.withLock { state in
            state.requests.append(request)
            defer { state.position += 1 }
            return state.position
        }
        let reply: Reply
        do {
            try Task.checkCancellation()
            reply = try await responder(request, call)
        } catch is CancellationError {
            recordCancellation()
            throw CancellationError()
        }
        switch reply {
        case .response(let response):
            return response.httpResponse(for: request)
        case .failure(let error):
            throw error
        case .hang:
            do {
                try await waitForCancellation()
            } catch {
                recordCancellation()
                throw error
            }
            fatalError("unreachable: waitForCancellation only returns by throwing")
        }
    }

    private func recordCancellation() {
        state.withLock { $0.cancellations += 1 }
    }

    /// Shortcut: every request gets `200 OK` with an empty body.
    public static var ok: MockTransport { MockTransport(.ok) }

    /// Shortcut: every request gets `500 Internal Server Error`.
    public static var serverError: MockTransport { MockTransport(.serverError) }
}

/// The error a ``MockTransport`` throws for a request it has no route for.
public struct MockTransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

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
