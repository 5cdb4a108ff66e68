import CourierTesting
import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How ``Client/download(_:to:resumable:resumeAttempts:idleTimeout:progressInterval:clock:progress:)`` reports
/// progress: at a bounded rate on the clock, from a task of its own, the latest report winning.
@Suite("Client.download's progress", .timeLimit(.minutes(1)))
struct DownloadProgressTests {
    private let base = URL(string: "http://127.0.0.1")!
    private let payload = Data((0..<5_000).map { UInt8($0 % 251) })

    /// Chunks of 1,000 bytes of the payload, from `start` up to `end`.
    private func chunks(_ start: Int, _ end: Int) -> [MockChunk] {
        stride(from: start, to: end, by: 1_000).map { .data(payload[$0..<$0 + 1_000]) }
    }

    /// Records each report and counts it.
    final class Reports: Sendable {
        let seen = Locked<[DownloadProgress]>([])
        let arrived = Arrivals()

        var written: [Int64] { seen.value.map(\.bytesWritten) }

        func record(_ progress: DownloadProgress) {
            seen.withLock { $0.append(progress) }
            arrived.arrive()
        }
    }

    @Test(
        "the first report comes with the head, then at most one per interval (the latest), and the last at once"
    )
    func rateOnTheClock() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let held = Arrivals()
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    chunks(0, 3_000) + [.hold(until: gate, counting: held)] + chunks(3_000, 5_000),
                    headers: ["Content-Length": "5000"]
                )
            )
        }
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let reports = Reports()
        let posted = Arrivals()
        let download = Task { [base] in
            try await DownloadProgressMailbox.$afterPost.withValue({ _ in posted.arrive() }) {
                try await Client(baseURL: base, transport: mock).download(
                    .get("/file"),
                    to: directory.file(),
                    clock: clock,
                    progress: reports.record
                )
            }
        }
        // The head's report at once; three chunks written (the body waits at the gate), and the interval not over.
        // The transfer posted the head's report and the three chunks' before the clock moves: the body was ready
        // before the transfer read it, so that it did is no sign it posted.
        await reports.arrived.wait(for: 1)
        await held.wait(for: 1)
        await posted.wait(for: 4)
        await clock.waitForSleepers(count: 1)
        #expect(reports.seen.value == [DownloadProgress(bytesWritten: 0, expectedBytes: 5_000)])
        #expect(clock.pendingDeadlines == [.init(offset: .milliseconds(100))])

        // The interval is over: the latest of the three reports, not each.
        clock.advance(by: .milliseconds(100))
        await reports.arrived.wait(for: 2)
        #expect(reports.written == [0, 3_000])

        // The rest arrives within the next interval: the completed download's report comes without waiting it out.
        gate.open()
        _ = try await download.join()
        #expect(reports.written == [0, 3_000, 5_000])
        #expect(reports.seen.value.last?.fractionCompleted == 1)
        #expect(clock.now.offset == .milliseconds(100))
        #expect(try Data(contentsOf: directory.file()) == payload)
    }

    @Test("a progress handler that does not return never holds up the transfer; reports it missed are coalesced")
    func slowHandlerNeverBlocks() async throws {
        let handlerGate = Gate()
        let bodyRead = Arrivals()
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    chunks(0, 5_000) + [.hold(until: Gate.opened, counting: bodyRead)],
                    headers: ["Content-Length": "5000"]
                )
            )
        }
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let reports = Reports()
        let download = Task { [base] in
            try await Client(baseURL: base, transport: mock).download(
                .get("/file"),
                to: directory.file(),
                progressInterval: .zero
            ) { progress in
                reports.record(progress)
                await handlerGate.wait()
            }
        }
        // The handler is stuck in its first report, and yet every chunk is read and written.
        await reports.arrived.wait(for: 1)
        await bodyRead.wait(for: 1)
        #expect(reports.written == [0])
        handlerGate.open()
        _ = try await download.join()
        // After the first, only the latest report: the chunks' reports in between were replaced, not queued.
        #expect(reports.written == [0, 5_000])
        #expect(try Data(contentsOf: directory.file()) == payload)
    }

    @Test("with an interval of zero every report is delivered when the handler keeps up")
    func zeroInterval() async throws {
        let steps = (0..<5).map { _ in Gate() }
        let mock = MockTransport {
            MockRoute.get("/file").replies(
                .stream(
                    (0..<5).flatMap { [.hold(until: steps[$0]), .data(payload[$0 * 1_000..<($0 + 1) * 1_000])] },
                    headers: ["Content-Length": "5000"]
                )
            )
        }
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let reports = Reports()
        let download = Task { [base] in
            try await Client(baseURL: base, transport: mock).download(
                .get("/file"),
                to: directory.file(),
                progressInterval: .zero,
                progress: reports.record
            )
        }
        for (index, step) in steps.enumerated() {
            await reports.arrived.wait(for: index + 1)
            step.open()
        }
        _ = try await download.join()
        #expect(reports.written == [0, 1_000, 2_000, 3_000, 4_000, 5_000])
    }

    @Test("the call returns after the handler returned from its last report, also when the download fails")
    func returnsAfterTheLastReport() async throws {
        let mock = MockTransport {
            MockRoute.get("/file").replies(.stream(chunks(0, 2_000) + [.drop()], headers: ["Content-Length": "5000"]))
        }
        let directory = try DownloadDirectory()
        defer { directory.remove() }
        let gate = Gate()
        let lastReport = Arrivals()
        let handlerReturned = Locked(false)
        let download = Task { [base] in
            try await Client(baseURL: base, transport: mock).download(
                .get("/file"),
                to: directory.file(),
                resumeAttempts: 0
            ) { progress in
                guard progress.bytesWritten == 2_000 else { return }
                lastReport.arrive()
                await gate.wait()
                handlerReturned.withLock { $0 = true }
            }
        }
        await lastReport.wait(for: 1)
        gate.open()
        await #expect(throws: CourierError.self) { try await download.join() }
        #expect(handlerReturned.value)
    }
}

extension Gate {
    /// A gate that is open from the start.
    static var opened: Gate {
        let gate = Gate()
        gate.open()
        return gate
    }
}
