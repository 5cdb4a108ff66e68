// A child process for StreamingEndToEndTests: `StreamReader KIND URL READ_AHEAD STALL_MS` streams URL (a
// `/stream/bytes/:bytes` of the test server) over KIND, `urlSession` or `asyncHTTPClient`, with READ_AHEAD as the
// transport's `maximumResponseSize`; it stops reading for STALL_MS milliseconds after the first chunk, reads the
// rest, and writes a `StreamReport` as one line of JSON to standard output.
//
// The peak resident memory it reports is the client's alone. Measured inside the test process, it counted the
// in-process server and whatever the tests running beside it allocated too: the 1 GiB stream's peak grew by
// 92 MiB once in a fresh-clone CI run, and by 10-23 MiB in every run of that test by itself.

import Courier
import Foundation
import TestServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 5, let url = URL(string: arguments[2]), let readAhead = Int(arguments[3]),
    let stall = Int(arguments[4])
else {
    FileHandle.standardError.write(
        Data("usage: StreamReader urlSession|asyncHTTPClient URL READ_AHEAD STALL_MS\n".utf8)
    )
    exit(2)
}
let transport: any Transport
switch arguments[1] {
case "urlSession":
    transport = URLSessionTransport(maximumResponseSize: readAhead)
case "asyncHTTPClient":
    transport = AsyncHTTPClientTransport(maximumResponseSize: readAhead)
default:
    FileHandle.standardError.write(Data("StreamReader: unknown transport \(arguments[1])\n".utf8))
    exit(2)
}
let client = Client(transport: transport)
do {
    let baseline = PeakMemory.reset()
    let (body, response) = try await client.stream(URLRequest(url: url))
    var report = StreamReport(
        status: response.statusCode,
        received: 0,
        misplaced: 0,
        failure: nil,
        message: nil,
        growth: 0
    )
    do {
        for try await chunk in body {
            // The first and last byte of every chunk are where the pattern says: a lost, repeated or reordered
            // chunk shows (checking every byte would make the debug build crawl).
            if chunk.first != TestServers.largeBodyByte(at: report.received)
                || chunk.last != TestServers.largeBodyByte(at: report.received + chunk.count - 1)
            {
                report.misplaced += 1
            }
            let first = report.received == 0
            report.received += chunk.count
            if first, stall > 0 {
                // The reader stalls, as a slow consumer does: the transport must not read on meanwhile.
                try await Task.sleep(for: .milliseconds(stall))
            }
        }
    } catch let error as CourierError {
        report.failure = error.code.description
        report.message = error.message
    }
    report.growth = PeakMemory.peak() - baseline
    FileHandle.standardOutput.write(try JSONEncoder().encode(report) + Data("\n".utf8))
} catch {
    FileHandle.standardError.write(Data("StreamReader: \(error)\n".utf8))
    exit(1)
}
