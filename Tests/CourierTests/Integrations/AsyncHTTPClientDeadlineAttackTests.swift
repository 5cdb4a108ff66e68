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
    @Test(
        "a body read by a Task spawned under the call's deadline, still arriving after the call, is cut at the deadline"
    )
    func spawnedReadOutlivingTheCall() async throws {
        // The scenario needs one order of events: the spawned request reaches the server before the call is
        // answered, and the call is answered within its 5 s. On a machine starved by a full parallel run either
        // may not happen (in a sweep beside two busy loops the call's own 5 s passed at 6.8 s while it waited for a
        // thread). Such a run says nothing about the spawned read, so the scenario runs again, up to three times;
        // on each run that met it, the read is held to its deadline.
        for attempt in 1...3 {
            guard let run = try await Self.spawnedReadScenario() else { continue }
            let error = try #require(run.read.failure as? CourierError, "attempt \(attempt): \(run.read)")
            #expect(error.code == .timedOut)
            #expect(error.timeout == .seconds(5))
            #expect(run.closedByClient, "the server never saw the spawned read's connection closed")
            return
        }
        Issue.record("in 3 runs the spawned request never reached the server before the call was answered in time")
    }

    /// What one run of ``spawnedReadOutlivingTheCall()`` saw: how the spawned read ended, and whether the server
    /// saw its connection closed.
    private struct SpawnedRead {
        var read: Result<Int, any Error>
        var closedByClient: Bool
    }

    /// Runs the scenario once; `nil` when its order of events did not happen.
    private static func spawnedReadScenario() async throws -> SpawnedRead? {
        // The call's answer waits (up to 4 s of its 5) until the spawned request has reached the server, so that
        // the spawned read is reading its body (attached to the call's work) when the call returns.
        let dripArrived = DispatchSemaphore(value: 0)
        let orderMet = Locked(false)
        let server = try SocketServer { request in
            guard request.path == "/drip" else {
                let arrived = dripArrived.wait(timeout: .now() + 4) == .success
                orderMet.withLock { $0 = arrived }
                return .response(status: 200)
            }
            dripArrived.signal()
            return .drip
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
        // Cut at the call's deadline whatever happened: never a hang.
        let readResult = await outcome { try await read.join() }
        guard orderMet.value, (try? result.get().1.statusCode) == 200 else {
            try await transport.shutdown()
            return nil
        }
        // The server stalls the spawned read's connection until the client closes it: cut at the deadline, the
        // client closes it before the transport shuts down (10 s is for a starved thread, not for the cut).
        let closedByClient = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await server.closedByClient.wait(for: 1)
                return server.closedByClient.count >= 1
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        try await transport.shutdown()
        return SpawnedRead(read: readResult, closedByClient: closedByClient)
    }
}
#endif
