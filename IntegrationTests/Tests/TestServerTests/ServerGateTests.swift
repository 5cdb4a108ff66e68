import TestServer
import Testing

/// The gate that lets a load test run with no other test server running. Each test uses a gate of its own, so
/// that the servers of the tests running beside it do not count.
@Suite("ServerGate: a test alone, servers side by side", .timeLimit(.minutes(1)))
struct ServerGateTests {
    /// Waits until `condition` holds, yielding in between; the suite's time limit bounds it.
    static func until(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test("A body runs alone once the last place is left, not before")
    func waitsForPlaces() async throws {
        let gate = ServerGate()
        let a = try await gate.enter("a")
        let b = try await gate.enter("b")
        #expect(gate.holders == ["a", "b"])

        let body = Task { try await gate.alone(waitingAtMost: .seconds(60)) { gate.holders } }
        await Self.until { gate.waiting.bodies == 1 }
        a.leave()
        #expect(gate.waiting.bodies == 1)
        #expect(gate.holders == ["b"])
        b.leave()
        #expect(try await body.value == [])
        #expect(gate.waiting.bodies == 0)
    }

    @Test("While a body runs alone, another task's server waits until it returns; the body's own servers do not")
    func serversWaitForTheBody() async throws {
        let gate = ServerGate()
        let other = try await gate.alone(waitingAtMost: .seconds(60)) {
            // The body's own server, and one started by a task it creates, take a place at once.
            let own = try await gate.enter("own")
            let child = try await Task { try await gate.enter("child") }.value
            #expect(gate.holders == [])

            // Another test's server (a detached task carries none of the body's task-locals) waits.
            let other = Task.detached { try await gate.enter("other") }
            await Self.until { gate.waiting.servers == 1 }
            #expect(gate.holders == [])
            own.leave()
            child.leave()
            return other
        }
        let place = try await other.value
        #expect(gate.holders == ["other"])
        #expect(gate.waiting.servers == 0)
        place.leave()
        #expect(gate.holders == [])
    }

    @Test("Two bodies run one after the other")
    func bodiesTakeTurns() async throws {
        let gate = ServerGate()
        let (firstMayEnd, endFirst) = AsyncStream.makeStream(of: Void.self)
        let (firstStarted, startedFirst) = AsyncStream.makeStream(of: Void.self)
        let first = Task {
            try await gate.alone(waitingAtMost: .seconds(60)) {
                startedFirst.finish()
                for await _ in firstMayEnd {}
                return "first"
            }
        }
        for await _ in firstStarted {}
        let second = Task.detached { try await gate.alone(waitingAtMost: .seconds(60)) { "second" } }
        await Self.until { gate.waiting.bodies == 1 }
        endFirst.finish()
        #expect(try await first.value == "first")
        #expect(try await second.value == "second")
        #expect(gate.waiting.bodies == 0)
    }

    @Test("A body that waits too long fails, naming the servers still running, and leaves the gate open")
    func waitingTooLong() async throws {
        let gate = ServerGate()
        let stuck = try await gate.enter("stuck")
        let error = await #expect(throws: TestServerError.self) {
            try await gate.alone(waitingAtMost: .milliseconds(10)) { Issue.record("the body ran") }
        }
        #expect(error?.description.contains(#"["stuck"]"#) == true)
        #expect(gate.waiting.bodies == 0)

        // Servers still start at once.
        let next = try await gate.enter("next")
        #expect(gate.holders == ["stuck", "next"])
        stuck.leave()
        next.leave()
    }

    @Test("Cancelling a waiting server or body ends its wait with CancellationError and removes it")
    func cancellation() async throws {
        let gate = ServerGate()
        try await gate.alone(waitingAtMost: .seconds(60)) {
            let server = Task.detached { try await gate.enter("other") }
            await Self.until { gate.waiting.servers == 1 }
            server.cancel()
            await #expect(throws: CancellationError.self) { try await server.value }
            #expect(gate.waiting.servers == 0)
        }

        let holder = try await gate.enter("holder")
        let body = Task { try await gate.alone(waitingAtMost: .seconds(60)) { Issue.record("the body ran") } }
        await Self.until { gate.waiting.bodies == 1 }
        body.cancel()
        await #expect(throws: CancellationError.self) { try await body.value }
        #expect(gate.waiting.bodies == 0)
        holder.leave()
        #expect(gate.holders == [])
    }

    @Test("A place is left when it is released without leave(), and leave() twice is harmless")
    func releasedPlace() async throws {
        let gate = ServerGate()
        var place: ServerGate.Place? = try await gate.enter("a")
        #expect(gate.holders == ["a"])
        place = nil
        #expect(place == nil)
        #expect(gate.holders == [])

        let b = try await gate.enter("b")
        b.leave()
        b.leave()
        #expect(gate.holders == [])
    }
}
