import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Request.timeout`: the client runs the call under a deadline of its own, with or without a timeout
/// middleware. These run on the real clock (the client's deadline is a `ContinuousClock` one) with short
/// timeouts over a transport that hangs until cancelled; nothing sleeps to synchronize.
@Suite("A request's own timeout", .timeLimit(.minutes(1)))
struct RequestTimeoutTests {
    private let base = URL(string: "https://api.example.test")

    /// The error a request of `timeout` throws over a hanging transport through `middleware`.
    private func timedOutError(
        timeout: Duration,
        middleware: [Middleware] = []
    ) async throws -> CourierError {
        let client = Client(baseURL: base, transport: MockTransport(.hang), middleware: middleware)
        let error = try await #require(throws: CourierError.self) {
            let _: EmptyResponse = try await client.send(.get("/slow", timeout: timeout))
        }
        return error
    }

    @Test("without a timeout middleware, the request's timeout cuts a hung call with timedOut")
    func withoutTimeoutMiddleware() async throws {
        let error = try await timedOutError(timeout: .milliseconds(50))
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(50))
        #expect(error.redactedURL == "https://api.example.test/slow")
    }

    @Test("under a longer timeout middleware, the request's earlier deadline wins")
    func requestDeadlineEarlier() async throws {
        let error = try await timedOutError(timeout: .milliseconds(50), middleware: [.timeout(.seconds(60))])
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(50))
    }

    @Test("under a shorter timeout middleware, the middleware's earlier deadline wins")
    func middlewareDeadlineEarlier() async throws {
        let error = try await timedOutError(timeout: .seconds(60), middleware: [.timeout(.milliseconds(50))])
        #expect(error.code == .timedOut)
        #expect(error.timeout == .milliseconds(50))
    }

    @Test("the chain and the transport see the request's deadline; without a timeout they see none")
    func deadlineIsVisible() async throws {
        let seen = Locked<[Duration?]>([])
        let transport = MockTransport { _ in
            seen.withLock { $0.append(Deadline.current?.timeout) }
            return .ok
        }
        let client = Client(baseURL: base, transport: transport)
        let _: EmptyResponse = try await client.send(.get("/fast", timeout: .seconds(30)))
        let _: EmptyResponse = try await client.send(.post("/fast", json: ["a": 1], timeout: .seconds(20)))
        let _: EmptyResponse = try await client.send(.get("/fast"))
        #expect(seen.withLock { $0 } == [.seconds(30), .seconds(20), nil])
    }

    @Test("every factory and initializer takes a timeout")
    func factories() {
        let requests: [Request<EmptyResponse>] = [
            .get("/r", timeout: .seconds(1)), .get(URL(string: "https://h.test/r")!, timeout: .seconds(1)),
            .head("/r", timeout: .seconds(1)), .delete("/r", timeout: .seconds(1)),
            .post("/r", timeout: .seconds(1)), .post("/r", json: 1, timeout: .seconds(1)),
            .put("/r", timeout: .seconds(1)), .put("/r", json: 1, timeout: .seconds(1)),
            .patch("/r", timeout: .seconds(1)), .patch("/r", json: 1, timeout: .seconds(1)),
        ]
        let initialized: [Request<EmptyResponse>] = [
            Request(method: .get, target: .path("/r"), timeout: .seconds(1)),
            Request(method: .get, target: .path("/r"), timeout: .seconds(1)) { _, _, _ in EmptyResponse() },
        ]
        #expect((requests + initialized).allSatisfy { $0.timeout == .seconds(1) })
        #expect(Request<EmptyResponse>.get("/r").timeout == nil)
    }
}
