import Foundation
import Testing

/// The OpenAPI article's Swift code is IntegrationTests' `OpenAPIArticleTests.swift`, which CI compiles and runs
/// against the generated example client: each block of the article (its manifest aside, which
/// `ReadmeCodeBlocksTests` compiles) must be in that file line for line.
@Suite("The OpenAPI article shows code that IntegrationTests compiles and runs")
struct OpenAPIArticleCodeTests {
    static let article = "Sources/Courier/Documentation.docc/OpenAPI.md"
    static let tested = "IntegrationTests/Tests/CourierEndToEndTests/OpenAPIArticleTests.swift"

    /// The lines of `text`, trimmed, blank ones left out.
    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Whether `block`'s lines appear in `file`'s lines, one after another.
    static func contains(_ file: [String], _ block: [String]) -> Bool {
        guard !block.isEmpty, block.count <= file.count else { return false }
        return (0...(file.count - block.count)).contains { Array(file[$0..<($0 + block.count)]) == block }
    }

    @Test("each Swift block of the article is in OpenAPIArticleTests.swift, line for line")
    func blocksAreTested() throws {
        let article = try String(contentsOf: packageRoot.appendingPathComponent(Self.article), encoding: .utf8)
        let file = Self.lines(try String(contentsOf: packageRoot.appendingPathComponent(Self.tested), encoding: .utf8))
        let blocks = ReadmeCodeBlocksTests.swiftBlocks(in: article).filter { !ReadmeCodeBlocksTests.isManifest($0) }
        #expect(blocks.count == 2, "the app's factory and its test")
        for block in blocks {
            #expect(Self.contains(file, Self.lines(block)), "not in \(Self.tested):\n\(block)")
        }
        // The test is a Swift Testing test that uses the factory with CourierTesting.
        #expect(
            blocks.contains { $0.contains("@Test(") && $0.contains(".mockTransport {") && $0.contains("itemsAPI(") }
        )
    }

    @Test("the check fails for a block the file does not have")
    func checkCanFail() {
        let file = Self.lines("let a = 1\nlet b = 2\n\nlet c = 3\n")
        #expect(Self.contains(file, ["let b = 2", "let c = 3"]))
        #expect(!Self.contains(file, ["let a = 1", "let c = 3"]))
        #expect(!Self.contains(file, []))
    }
}
