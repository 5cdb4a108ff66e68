import Foundation
import Testing

/// Rules the tests themselves keep, checked over their sources so that a new test cannot break them unseen.
@Suite("Test sources keep the suite's rules")
struct TestSourceHygieneTests {
    /// The folders of tests that use the testing kit.
    static let folders = ["Tests", "IntegrationTests/Tests/CourierEndToEndTests"]

    /// Every `.swift` file under the folders, by its path from the package root, with its text.
    static func sources() throws -> [(path: String, text: String)] {
        var found: [(String, String)] = []
        for folder in folders {
            let root = packageRoot.appendingPathComponent(folder)
            let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                guard url.pathExtension == "swift" else { continue }
                let text = try String(contentsOf: url, encoding: .utf8)
                found.append((folder + "/" + url.path.replacingOccurrences(of: root.path + "/", with: ""), text))
            }
        }
        return found
    }

    /// The places where a line awaits `.value` of something, which in these tests is a task they started.
    static func awaitedValues(in text: String) -> [String] {
        let pattern = #/await\s+(?:\(\s*)?[A-Za-z_][A-Za-z_0-9]*(?:\[[^\]]*\])?\.value\b/#
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            line.contains(pattern) ? "\(index + 1): \(line.trimmingCharacters(in: .whitespaces))" : nil
        }
    }

    @Test(
        "a test awaits a task it started with join(), which passes its time limit's cancellation on, never with value"
    )
    func tasksAreJoined() throws {
        let sources = try Self.sources()
        #expect(sources.count > 100, "the scan found \(sources.count) files: is packageRoot right?")
        let places = sources.flatMap { source in Self.awaitedValues(in: source.text).map { "\(source.path):\($0)" } }
        // Allowed: the tests of join() itself, which compare it with value, and this file's own examples.
        let allowed = [
            "Tests/CourierTestingTests/TaskJoinTests.swift:",
            "Tests/CourierTests/Hygiene/TestSourceHygieneTests.swift:",
        ]
        let offending = places.filter { place in !allowed.contains(where: place.hasPrefix) }
        #expect(offending.isEmpty, "await task.join() instead:\n\(offending.joined(separator: "\n"))")
    }

    /// The lines that wait for a child process or read its pipe with a call that blocks its thread.
    static func blockingWaits(in text: String) -> [String] {
        let pattern = #/\.(waitUntilExit|readDataToEndOfFile|availableData)\b/#
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            let code = line.trimmingCharacters(in: .whitespaces)
            return !code.hasPrefix("//") && line.contains(pattern) ? "\(index + 1): \(code)" : nil
        }
    }

    @Test(
        "a test waits for a child process with ChildProcess, on a thread of its own, never on the cooperative pool's"
    )
    func childProcessesDoNotBlockThePool() throws {
        let places = try Self.sources().flatMap { source in
            Self.blockingWaits(in: source.text).map { "\(source.path):\($0)" }
        }
        // Allowed: the two files of helpers that make these calls on a thread they start for them.
        let allowed = [
            "Tests/CourierTests/Support/ChildProcess.swift:",
            "IntegrationTests/Tests/CourierEndToEndTests/ChildProcesses.swift:",
            "Tests/CourierTests/Hygiene/TestSourceHygieneTests.swift:",
        ]
        let offending = places.filter { place in !allowed.contains(where: place.hasPrefix) }
        #expect(offending.isEmpty, "use ChildProcess.run instead:\n\(offending.joined(separator: "\n"))")
    }

    @Test(
        "the blocking-wait scan finds each blocking call and skips comments",
        arguments: [
            ("process.waitUntilExit()", 1),
            ("let out = pipe.fileHandleForReading.readDataToEndOfFile()", 1),
            ("let chunk = handle.availableData", 1),
            ("// readDataToEndOfFile() blocks", 0),
            ("try await ChildProcess.run(swiftc)", 0),
        ]
    )
    func blockingWaitScan(line: String, count: Int) {
        #expect(Self.blockingWaits(in: line).count == count)
    }

    @Test(
        "the scan finds each form of awaiting a task's value",
        arguments: [
            "let x = await task.value",
            "#expect(try await call.value == 3)",
            "_ = await (a.value, b.value)",
            "try await waiters[index].value",
        ]
    )
    func scanFinds(line: String) {
        #expect(Self.awaitedValues(in: line).count == 1)
    }

    @Test(
        "the scan leaves joins and other values alone",
        arguments: [
            "let x = await task.join()",
            "let v = events.value",
            "request.value(forHTTPHeaderField: \"A\")",
        ]
    )
    func scanIgnores(line: String) {
        #expect(Self.awaitedValues(in: line).isEmpty)
    }

    /// The pattern of the suites `Scripts/trait-tests` runs in a process of their own, as the script spells it.
    static func realTimePattern() throws -> String {
        let script = try String(contentsOf: packageRoot.appendingPathComponent("Scripts/trait-tests"), encoding: .utf8)
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("realtime='") })
        return String(line.dropFirst("realtime='".count).dropLast())
    }

    /// The suites declared in `text`: the type after each `@Suite` attribute.
    static func suiteNames(in text: String) -> [String] {
        var names: [String] = []
        var inAttribute = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("@Suite") { inAttribute = true }
            guard inAttribute else { continue }
            for keyword in ["struct ", "final class ", "enum ", "actor "] where line.hasPrefix(keyword) {
                names.append(String(line.dropFirst(keyword.count).prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
                inAttribute = false
            }
        }
        return names
    }

    @Test(
        "a suite compiled only with the Postgres or AsyncHTTPClient trait runs in trait-tests' second process, as CONTRIBUTING.md says"
    )
    func realTimeSuitesRunAlone() throws {
        let pattern = try Self.realTimePattern()
        let guide = try String(contentsOf: packageRoot.appendingPathComponent("CONTRIBUTING.md"), encoding: .utf8)
        #expect(guide.contains("`\(pattern)`"), "CONTRIBUTING.md does not give \(pattern)")
        let regex = try Regex(pattern)
        var checked = 0
        var outside: [String] = []
        for source in try Self.sources() where source.path.hasPrefix("Tests/CourierTests/") {
            let firstLine = source.text.prefix { $0 != "\n" }
            guard firstLine.hasPrefix("#if Postgres") || firstLine.hasPrefix("#if AsyncHTTPClient") else { continue }
            for name in Self.suiteNames(in: source.text) {
                checked += 1
                if !"CourierTests.\(name)/test()".contains(regex) { outside.append("\(source.path): \(name)") }
            }
        }
        #expect(checked > 15, "found \(checked) suites: is the scan right?")
        #expect(outside.isEmpty, "name these suites with a prefix of \(pattern):\n\(outside.joined(separator: "\n"))")
    }

    @Test("suiteNames finds the type after each @Suite attribute, over several lines, and nothing else")
    func suiteNameScan() {
        let text = """
            @Suite("one", .serialized)
            struct PostgresOne {}
            struct NotASuite {}
            @Suite(
                "two",
                .timeLimit(.minutes(1))
            )
            final class FleetTwo {}
            """
        #expect(Self.suiteNames(in: text) == ["PostgresOne", "FleetTwo"])
    }
}
