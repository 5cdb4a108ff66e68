// A child process for DownloadEndToEndTests: `DownloadResumer URL PATH` downloads URL to the file PATH with
// `resumable: true` over AsyncHTTPClient, and writes each progress report's byte count on a line of its own to
// standard output. The test kills it (SIGKILL) once it reports enough, then resumes the download itself.

import Courier
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3, URL(string: arguments[1]) != nil else {
    FileHandle.standardError.write(Data("usage: DownloadResumer URL PATH\n".utf8))
    exit(2)
}
let client = Client(transport: AsyncHTTPClientTransport())
do {
    _ = try await client.download(
        .get(arguments[1]),
        to: URL(fileURLWithPath: arguments[2]),
        resumable: true,
        resumeAttempts: 0
    ) { progress in
        // Unbuffered: the test reads each line as it is written.
        FileHandle.standardOutput.write(Data("\(progress.bytesWritten)\n".utf8))
    }
    FileHandle.standardOutput.write(Data("done\n".utf8))
} catch {
    FileHandle.standardError.write(Data("DownloadResumer: \(error)\n".utf8))
    exit(1)
}
