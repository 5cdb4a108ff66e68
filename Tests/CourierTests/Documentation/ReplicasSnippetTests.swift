import Foundation
import Testing

/// `swift run Replicas` (the Fleet article's snippet): three replicas sharing a token store and a cache refresh
/// once between them, with no refresh token presented twice, and fetch a shared resource from the origin once.
@Suite(
    "The Replicas snippet",
    .enabled(if: BuildProducts.executable("Replicas") != nil, "the Replicas executable was not built"),
    .timeLimit(.minutes(1))
)
struct ReplicasSnippetTests {
    @Test("it prints one refresh, no revoked family and one origin fetch for 150 calls on three replicas")
    func output() async throws {
        let result = try await ChildProcess.run(try #require(BuildProducts.executable("Replicas")))
        #expect(result.status == 0)
        let lines = result.lines
        #expect(
            lines == [
                "calls succeeded:  150 of 150",
                "token refreshes:  1 (family revoked: false)",
                "store leases:     1",
                "catalog fetched:  1 time(s) from the origin for 3 replicas",
            ]
        )
    }
}
