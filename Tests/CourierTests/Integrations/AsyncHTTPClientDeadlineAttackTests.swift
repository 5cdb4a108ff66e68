#if AsyncHTTPClient
import AsyncHTTPClient
import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Attacks, end to end, on the body read that AsyncHTTPClientTransport attaches to the work a timeout armed in
/// its shared timer. `DeadlineAttachAttackTests` drives the same cases deterministically on a manual clock.
@Suite("AsyncHTTPClientTransport under a timeout's shared timer, attacked", .timeLimit(.minutes(1)))
struct AsyncHTTPClientDeadlineAttackTests {
    /// What the server sends for a body that never ends: the head and 10 of the 1,000 bytes it announces.
    private static let drip = SocketServer.Reply.stall(
        status: 200,
        headers: [.init(name: "Content-Length", value: "1000")],
        body: Data(count: 10)
    )

    @Test(
        "a body read by a Task spawned under the call's deadline, still arriving after the call, is cut at the deadline"
    )
    func spawnedReadOutlivingTheCall() async throws {
        // The call's answer waits (up to 2 s) until the spawned request has reached the server, so that the
        // spawned read is likely to be reading its body (attached to the call's work) when the call returns. The
        // call's timeout is long enough for that on a machine busy with the whole suite (300 ms was not).
        let dripArrived = DispatchSemaphore(value: 0)
        let server = try SocketServer { request in
            guard request.path == "/drip" else {
                _ = dripArrived.wait(timeout: .now() + 2)
                return .response(status: 200)
            }
            dripArrived.signal()
            return Self.drip
        }
        defer { server.shutdown() }
        let transport = AsyncHTTPClientTransport()
        // A log sink that ships its records from a `Task { }`, over a client with no timeout of its own: the
        // task inherits the call's deadline, which the transport enforces.
        let shipper = Client(transport: transport)
        let shipped = Locked<Task<Int, any Error>?>(nil)
        let sink = LogSink { record in
            guard record.event == .started else { return }
            shipped.withLock {
                $0 = Task { try await shipper.send(URLRequest(url: server.url("/drip"))).1.statusCode }
            }
        }
        let client = Client(
            transport: transport,
            middleware: [.timeout(.seconds(5)), .logging(to: sink, startLevel: .info)]
        )
        let result = await outcome { try await client.send(URLRequest(url: server.url("/answer"))) }
        let read = try #require(shipped.value)
        let readResult = await outcome { try await read.join() }
        try await transport.shutdown()
        #expect(try result.get().1.statusCode == 200)
        let error = try #require(readResult.failure as? CourierError, "\(readResult)")
        #expect(error.code == .timedOut)
        #expect(error.timeout == .seconds(5))
        await server.closedByClient.wait(for: 1)
    }
}

extension Result {
    /// The error, when this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
#endif
