import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `DownloadResumer` executable run as a child process: a resumable download in a process of its own, killed
/// with `SIGKILL` mid-body, as a deploy or a crash would end it.
enum ChildDownload {
    /// The built `DownloadResumer`, beside this test bundle in `.build/debug` (`swift build` builds it with the
    /// tests).
    static let executable: URL? = {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("DownloadResumer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }()

    /// How the child ended.
    struct Outcome {
        /// The byte counts it reported, in order.
        var reports: [Int64]
        /// Whether it was still downloading when killed, and died of the `SIGKILL`.
        var killed: Bool
    }

    /// A process and its output, handed to the threads that wait on them.
    private final class Child: @unchecked Sendable {
        let process = Process()
        let output = Pipe()
    }

    /// Runs `DownloadResumer url destination`, waits until it reports at least `bytes` written (or ends), and
    /// kills it with `SIGKILL`. Cancelling the waiting task kills it too.
    static func killAfterReport(of bytes: Int64, url: URL, destination: URL) async throws -> Outcome {
        let executable = try #require(executable, "DownloadResumer is not built beside the tests: run swift build")
        let child = Child()
        child.process.executableURL = executable
        child.process.arguments = [url.absoluteString, destination.path]
        child.process.standardOutput = child.output
        try child.process.run()
        let pid = child.process.processIdentifier
        let reports = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Int64], Never>) in
                // The pipe is read with blocking reads, on a thread of its own rather than the cooperative pool's.
                Thread.detachNewThread {
                    var reports: [Int64] = []
                    var buffer = Data()
                    let handle = child.output.fileHandleForReading
                    while true {
                        let chunk = handle.availableData
                        if chunk.isEmpty { break }
                        buffer.append(chunk)
                        while let newline = buffer.firstIndex(of: 0x0A) {
                            let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                            buffer.removeSubrange(buffer.startIndex...newline)
                            guard let count = Int64(line) else { continue }
                            reports.append(count)
                            if count >= bytes {
                                continuation.resume(returning: reports)
                                return
                            }
                        }
                    }
                    continuation.resume(returning: reports)
                }
            }
        } onCancel: {
            _ = kill(pid, SIGKILL)
        }
        let stillRunning = child.process.isRunning
        _ = kill(pid, SIGKILL)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                child.process.waitUntilExit()
                continuation.resume()
            }
        }
        let killed =
            stillRunning && child.process.terminationReason == .uncaughtSignal
            && child.process.terminationStatus == SIGKILL
        return Outcome(reports: reports, killed: killed)
    }
}
