import Foundation
import Testing

/// The CourierTesting article's example is code the package compiles and runs: each of its blocks that uses the
/// example's `AccountService` or a `ManualClock` is, line for line, in the snippet (the app's code) or in the
/// tests of it; and the example is the recommended stack, tested with the documented tools.
@Suite("The testing article shows code that compiles and passes")
struct TestingArticleTests {
    static let article = "Sources/CourierTesting/Documentation.docc/TestingWithCourier.md"
    static let sources = [
        "Snippets/TestingExample.swift", "Tests/CourierTestingTests/Examples/AccountServiceTests.swift",
    ]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("each block of the article that uses AccountService or a ManualClock is in the snippet or its tests")
    func blocksAreCompiled() throws {
        let files = try Self.sources.map { OpenAPIArticleCodeTests.lines(try Self.text($0)) }
        let blocks = ReadmeCodeBlocksTests.swiftBlocks(in: try Self.text(Self.article)).filter {
            $0.contains("AccountService") || $0.contains("ManualClock()")
        }
        #expect(blocks.count >= 4, "the article shows \(blocks.count) such blocks")
        for block in blocks {
            let lines = OpenAPIArticleCodeTests.lines(block)
            #expect(
                files.contains { OpenAPIArticleCodeTests.contains($0, lines) },
                "not in \(Self.sources.joined(separator: " or ")):\n\(block)"
            )
        }
    }

    @Test("the example uses .retry, TokenRefresher and both timeouts on the test's clock, and runs them with clock.run")
    func exampleUsesTheBuiltIns() throws {
        let snippet = try Self.text(Self.sources[0])
        for piece in [
            ".timeout(.seconds(30), clock: clock)", ".retry(retry, clock: clock)", ".authenticating(with: auth)",
            ".timeout(.seconds(5), clock: clock)", "TokenRefresher(token:",
        ] {
            #expect(snippet.contains(piece), "the snippet has no \(piece)")
        }
        // The app's code names no retry or renewal of its own.
        #expect(!snippet.contains("Middleware(name:"))
        let tests = try Self.text(Self.sources[1])
        #expect(tests.contains("try await clock.run { try await service.profile() }"))
        #expect(tests.contains("service.auth.refreshCount == 1"))
    }
}
