import Foundation
import Testing

/// `swift run QuickTour`, the README's first command: each line it prints states what happened. The test runs
/// the executable SwiftPM built beside this test bundle. That the tour finishes within 2 seconds is checked
/// by CI (`.ci/run`, the snippets step) on an otherwise idle machine, not here, where tests run in parallel
/// and possibly under the thread sanitizer.
@Suite(
    "The quick tour",
    .enabled(if: BuildProducts.executable("QuickTour") != nil, "the QuickTour executable was not built"),
    .timeLimit(.minutes(1))
)
struct QuickTourTests {
    /// The tour's output.
    static func run() async throws -> [String] {
        let result = try await ChildProcess.run(try #require(BuildProducts.executable("QuickTour")))
        #expect(result.status == 0)
        return result.lines
    }

    /// The lines the tour must print, but for the fan-out's peak (`nil`), which depends on scheduling.
    static let expected: [String?] = [
        "1. 100 concurrent calls with an expired token: 100 succeeded, 1 token refresh",
        "2. a flaky endpoint (503, 503, 200): Grace Hopper on attempt 3, after backing off 10 ms and 20 ms",
        "3. a hung endpoint: cut by its timeout after 50 ms (timedOut)",
        nil,
        "5. a forbidden call: unacceptableStatus 403 with API error 999: Invalid Token.",
        "6. a header value with CR LF: refused (invalidRequest); 0 requests sent",
    ]

    @Test("it prints six steps, each stating what happened")
    func tour() async throws {
        let lines = try await Self.run()
        try #require(lines.count == Self.expected.count, "\(lines)")
        for (line, expected) in zip(lines, Self.expected) where expected != nil {
            #expect(line == expected)
        }
        // 4. The counter's peak is at most the fan-out's limit, and the counter is back at zero.
        let fanOut = lines[3]
        #expect(fanOut.hasPrefix("4. a fan-out of 20 calls, at most 5 at a time: peak "))
        #expect(fanOut.hasSuffix(" in flight, 0 in flight after"))
        let words = fanOut.split(separator: " ")
        let peak = words.firstIndex(of: "peak").flatMap { Int(words[$0 + 1]) }
        #expect((1...5).contains(peak ?? 0), "\(fanOut)")
    }
}
