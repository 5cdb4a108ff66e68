#if AsyncHTTPClient
import AsyncHTTPClient
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport enforces a call's ``Deadline`` itself, from the first byte sent to the last byte of the body:
/// a timeout above it then needs no child task of its own (see `DeadlineEnforcingTransport`).
extension AsyncHTTPClientTransport: DeadlineEnforcingTransport {
    /// AsyncHTTPClient takes a wall-clock deadline, so a deadline on a clock that runs in real time.
    func enforces(_ deadline: Deadline) -> Bool {
        deadline.isRealTime
    }

    /// Collects the body of `response`, by `deadline` when there is one.
    ///
    /// AsyncHTTPClient applies its deadline until the head arrives, not to the body, so the body's wait is
    /// bounded here: it is read in a child task that starts at once, and at the deadline the read is cancelled,
    /// which makes AsyncHTTPClient close the connection. The error is ``CourierError/Code/timedOut``. Under a
    /// timeout middleware's deadline (the usual case) the child attaches to the work that timeout armed in its
    /// shared timer, which cancels it; under a deadline set any other way, a body still on its way starts a
    /// timer of its own (see `TimeoutRunner.run(attachedTo:request:operation:)`).
    func collect(
        _ response: HTTPClientResponse,
        for request: URLRequest,
        by deadline: Deadline?
    ) async throws -> (Data, HTTPURLResponse) {
        // Under a timeout that cancels the task this runs in at the deadline, a second timer would only repeat it.
        guard let deadline, !deadline.isEnforcedAbove else { return try await collect(response, for: request) }
        return try await TimeoutRunner.run(attachedTo: deadline, request: request) { request in
            try await self.collect(response, for: request)
        }
    }
}
#endif
