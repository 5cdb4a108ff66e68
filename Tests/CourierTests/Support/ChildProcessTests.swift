import CourierTesting
import Foundation
import Testing

@Suite("ChildProcess: a test waiting for a child process holds no thread of the cooperative pool")
struct ChildProcessTests {
    @Test(
        "more children than the pool has threads run at once, and other tasks go on while they wait",
        .timeLimit(.minutes(1))
    )
    func childrenDoNotStarveThePool() async throws {
        // One more child than the pool has threads: were each wait to block a pool thread, nothing else in this
        // process could run until the children ended.
        let count = ProcessInfo.processInfo.activeProcessorCount + 1
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-child-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let inputs = (0..<count).map { _ in Pipe() }
        let guardFired = Locked(false)
        let closeInputs = { @Sendable in
            for input in inputs { try? input.fileHandleForWriting.close() }
        }

        try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
            for (index, input) in inputs.enumerated() {
                let marker = folder.appendingPathComponent("\(index)").path
                group.addTask {
                    // The child says it runs by creating its marker, then copies its input to its output.
                    try await ChildProcess.run(
                        URL(fileURLWithPath: "/bin/sh"),
                        ["-c", "touch \"$0\"; exec cat", marker],
                        input: input.fileHandleForReading
                    )
                }
            }
            try await waitUntil {
                (0..<count).allSatisfy {
                    FileManager.default.fileExists(atPath: folder.appendingPathComponent("\($0)").path)
                }
            }
            // Every child runs and waits for its input; a task of the pool still runs. A hang guard, not a
            // synchronization: should the pool be starved, it ends the children after 30 s, so that a failing run
            // reports (below) instead of hanging. It starts only now: started with the test, it also timed the
            // children's start and the wait for their markers, which took longer than 30 s in a sanitized run with
            // every other test of the process (CI sweep, 2026-11-27).
            Thread {
                Thread.sleep(forTimeInterval: 30)
                guardFired.withLock { $0 = true }
                closeInputs()
            }.start()
            let ran = await Task.detached { true }.join()
            #expect(ran && !guardFired.value, "the pool was starved until the guard ended the children")

            for (index, input) in inputs.enumerated() {
                try? input.fileHandleForWriting.write(contentsOf: Data("child \(index)\n".utf8))
            }
            closeInputs()
            var lines: [String] = []
            for try await result in group {
                #expect(result.status == 0)
                lines += result.lines
            }
            #expect(lines.sorted() == (0..<count).map { "child \($0)" }.sorted())
        }
    }

    @Test("a child's exit status and output come back", .timeLimit(.minutes(1)))
    func statusAndOutput() async throws {
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "echo out; echo err >&2; exit 3"]
        )
        #expect(result.status == 3)
        #expect(result.lines.sorted() == ["err", "out"])
    }
}
