import Foundation
import TestServer
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process and its output, handed to the threads that wait on them.
private final class Child: @unchecked Sendable {
    let process = Process()
    let output = Pipe()

    /// Starts `name`, built beside this test bundle in `.build/debug` (`swift build` builds the package's
    /// executables with the tests), with `arguments`.
    init(_ name: String, arguments: [String]) throws {
        guard let executable = Self.executable(name) else {
            throw CocoaError(
                .fileNoSuchFile,
                userInfo: [NSLocalizedDescriptionKey: "\(name) is not built beside the tests: run swift build"]
            )
        }
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        try process.run()
    }

    private static func executable(_ name: String) -> URL? {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return nil
    }

    /// Waits, on a thread of its own rather than the cooperative pool's, until the process has ended.
    func waitUntilExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.process.waitUntilExit()
                continuation.resume()
            }
        }
    }
}

/// The `DownloadResumer` executable run as a child process: a resumable download in a process of its own, killed
/// with `SIGKILL` mid-body, as a deploy or a crash would end it.
enum ChildDownload {
    /// How the child ended.
    struct Outcome {
        /// The byte counts it reported, in order.
        var reports: [Int64]
        /// Whether it was still downloading when killed, and died of the `SIGKILL`.
        var killed: Bool
    }

    /// Runs `DownloadResumer url destination`, waits until it reports at least `bytes` written (or ends), and
    /// kills it with `SIGKILL`. Cancelling the waiting task kills it too.
    static func killAfterReport(of bytes: Int64, url: URL, destination: URL) async throws -> Outcome {
        let child = try Child("DownloadResumer", arguments: [url.absoluteString, destination.path])
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
        await child.waitUntilExit()
        let killed =
            stillRunning && child.process.terminationReason == .uncaughtSignal
            && child.process.terminationStatus == SIGKILL
        return Outcome(reports: reports, killed: killed)
    }
}

/// The `StreamReader` executable run as a child process: a streamed response read in a process of its own, so
/// that its peak resident memory is the client's alone, not the in-process server's nor that of the tests running
/// beside it.
enum ChildStreamReader {
    /// Streams `url` over `kind` with `readAhead` as the transport's `maximumResponseSize`, stalling
    /// `stallMilliseconds` after the first chunk, and returns what the child reported. Cancelling the waiting task
    /// kills the child.
    static func read(
        _ kind: TransportKind,
        url: URL,
        readAhead: Int,
        stallMilliseconds: Int = 0
    ) async throws -> StreamReport {
        let child = try Child(
            "StreamReader",
            arguments: [kind.rawValue, url.absoluteString, String(readAhead), String(stallMilliseconds)]
        )
        let pid = child.process.processIdentifier
        let output = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
                // The pipe is read with a blocking read, on a thread of its own rather than the cooperative pool's.
                Thread.detachNewThread {
                    continuation.resume(returning: child.output.fileHandleForReading.readDataToEndOfFile())
                }
            }
        } onCancel: {
            _ = kill(pid, SIGKILL)
        }
        await child.waitUntilExit()
        try #require(
            child.process.terminationReason == .exit && child.process.terminationStatus == 0,
            "StreamReader ended with status \(child.process.terminationStatus)"
        )
        return try JSONDecoder().decode(StreamReport.self, from: output)
    }
}
