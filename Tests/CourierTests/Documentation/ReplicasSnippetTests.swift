import Foundation
import Testing

/// `swift run Replicas` (the Fleet article's snippet): three replicas sharing a token store, a quota and a cache
/// refresh once between them, with no refresh token presented twice, keep the API's quota of 100 requests a second
/// together (more than 150 requests, none refused), and fetch a shared resource from the origin once.
@Suite(
    "The Replicas snippet",
    .enabled(if: BuildProducts.executable("Replicas") != nil, "the Replicas executable was not built"),
    .timeLimit(.minutes(1))
)
struct ReplicasSnippetTests {
    @Test("it prints one refresh, no revoked family, a full second with no 429 and one origin fetch for 150 calls")
    func output() async throws {
        let result = try await ChildProcess.run(try #require(BuildProducts.executable("Replicas")))
        #expect(result.status == 0)
        let lines = result.lines
        #expect(
            lines == [
                "calls succeeded:  150 of 150",
                "token refreshes:  1 (family revoked: false)",
                "store leases:     1",
                "busiest second:   100 requests of 100 allowed, 0 answered 429",
                "catalog fetched:  1 time(s) from the origin for 3 replicas",
            ]
        )
    }
}
