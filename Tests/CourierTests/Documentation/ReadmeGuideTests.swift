import Foundation
import Testing

/// What the README tells a newcomer around its example: the first two commands, the snippets it lists, the
/// Linux import, and what the "known issues" at the end of `swift test` are.
@Suite("The README's guide for newcomers")
struct ReadmeGuideTests {
    static func readme() throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    }

    @Test("the README starts with `swift run QuickTour` and `swift test`")
    func firstCommands() throws {
        let firstBlock = try Self.readme().components(separatedBy: "```").dropFirst().first ?? ""
        let commands = firstBlock.split(separator: "\n").dropFirst().map {
            $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces)
        }
        #expect(commands == ["swift run QuickTour", "swift test"])
    }

    @Test("CI runs the README's test command (`swift test`, with warnings as errors, under a time limit)")
    func testCommandInCI() throws {
        let firstBlock = try Self.readme().components(separatedBy: "```").dropFirst().first ?? ""
        let command = try #require(
            firstBlock.split(separator: "\n").map { $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("swift test") }
        )
        let ci = try String(contentsOf: packageRoot.appendingPathComponent(".ci/run"), encoding: .utf8)
        // `run_tests timeout SECONDS swift test …`: the README's words, then only options CI adds.
        let runs = ci.split(separator: "\n").compactMap { line -> [Substring]? in
            let words = line.split(separator: " ")
            guard words.count > 3, words[0] == "run_tests", words[1] == "timeout", Int(words[2]) != nil else {
                return nil
            }
            return Array(words.dropFirst(3))
        }
        let readme = command.split(separator: " ")
        #expect(runs.contains { $0 == readme + ["-Xswiftc", "-warnings-as-errors"] }, "\(runs)")
    }

    @Test("the snippets table lists every file in Snippets/, each once, and nothing else")
    func snippetsTable() throws {
        let listed = try Self.readme().split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `swift run ") else { return nil }
            return line.dropFirst("| `swift run ".count).split(separator: "`").first.map(String.init)
        }
        let files = try FileManager.default.contentsOfDirectory(
            atPath: packageRoot.appendingPathComponent("Snippets").path
        )
        .filter { $0.hasSuffix(".swift") }
        .map { String($0.dropLast(".swift".count)) }
        #expect(listed.sorted() == files.sorted())
        #expect(Set(listed).count == listed.count)
    }

    @Test("known issues come only from CourierTesting's tests of its own failure reports")
    func knownIssues() throws {
        let needle = "withKnown" + "Issue"
        var places: [String] = []
        let tests = packageRoot.appendingPathComponent("Tests")
        let enumerator = FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift", try String(contentsOf: url, encoding: .utf8).contains(needle) else {
                continue
            }
            places.append(url.path.replacingOccurrences(of: tests.path + "/", with: ""))
        }
        #expect(!places.isEmpty)
        #expect(places.allSatisfy { $0.hasPrefix("CourierTestingTests/") && $0.contains("Trait") }, "\(places)")
    }

    #if canImport(FoundationNetworking)
    @Test(
        "on Linux, URLRequest needs import FoundationNetworking: import Courier does not bring it",
        .enabled(if: CompilerCheck.isAvailable)
    )
    func foundationNetworking() async throws {
        let code = "let request = URLRequest(url: URL(string: \"https://api.example.test\")!)\n_ = request"
        let without = try await CompilerCheck.typecheck(code, importingFoundationNetworking: false)
        #expect(without.contains("cannot find 'URLRequest' in scope"), "\(without)")
        let with = try await CompilerCheck.typecheck(code)
        #expect(!with.contains("error:"), "\(with)")
    }
    #endif
}
