import Foundation

/// Runs a child process (the compiler, a built snippet) without blocking a thread of Swift's cooperative pool.
///
/// `readDataToEndOfFile()` and `waitUntilExit()` block the thread they run on. Called from a test, that thread is
/// one of the pool's, which has one per core: on a 2-core machine two tests waiting for `swiftc` (seconds each,
/// far longer under load) stopped every other test in the process, and a test with a real-clock timeout failed
/// after 40 s of waiting for a thread (issue 31). Here the blocking calls run on a thread of their own, and the
/// caller waits on a continuation; cancelling the caller (a time limit) terminates the child.
enum ChildProcess {
    /// What a finished child printed, standard output and standard error together, and its exit status.
    struct Result: Sendable {
        var status: Int32
        var output: Data

        var text: String { String(decoding: output, as: UTF8.self) }
        var lines: [String] { text.split(separator: "\n").map(String.init) }
    }

    /// Runs `executable` with `arguments` until it exits.
    ///
    /// - Parameters:
    ///   - input: The child's standard input; `nil` leaves the test process's.
    ///   - environment: Variables added to the test process's environment for the child.
    static func run(
        _ executable: URL,
        _ arguments: [String] = [],
        input: FileHandle? = nil,
        environment: [String: String] = [:]
    ) async throws -> Result {
        let process = Box(Process())
        process.value.executableURL = executable
        process.value.arguments = arguments
        if let input { process.value.standardInput = input }
        if !environment.isEmpty {
            process.value.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.value.standardOutput = pipe
        process.value.standardError = pipe
        try process.value.run()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread {
                    let output = pipe.fileHandleForReading.readDataToEndOfFile()
                    process.value.waitUntilExit()
                    continuation.resume(returning: Result(status: process.value.terminationStatus, output: output))
                }.start()
            }
        } onCancel: {
            process.value.terminate()
        }
    }

    /// A process handed to the thread that waits for it and to the cancellation handler; `Process` is safe to
    /// use from several threads for what they do with it (wait, read its status, terminate).
    private final class Box: @unchecked Sendable {
        let value: Process
        init(_ value: Process) { self.value = value }
    }
}
