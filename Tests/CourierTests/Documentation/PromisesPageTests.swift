import Foundation
import Testing

/// The Promises article names, for each promise, the tests that hold it; this checks that every test it names
/// exists, so the page fails the build instead of drifting from the suite.
@Suite("The Promises article names tests that exist")
struct PromisesPageTests {
    /// A reference on the page: a test file and the names of tests in it.
    struct Reference {
        let file: String
        let names: [String]
    }

    /// The references of the page, one per `- `path`: "name", "name"` item (items may wrap over lines).
    static func references(in page: String) -> [Reference] {
        var items: [String] = []
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("- `Tests/") {
                items.append(String(line))
            } else if line.hasPrefix("  "), !items.isEmpty, !line.trimmingCharacters(in: .whitespaces).isEmpty {
                items[items.count - 1] += " " + line.trimmingCharacters(in: .whitespaces)
            }
        }
        return items.compactMap { item in
            let parts = item.split(separator: "`")
            guard parts.count >= 3 else { return nil }
            let quoted = parts[2...].joined(separator: "`").split(separator: "\"", omittingEmptySubsequences: false)
            // Every other piece between double quotes is a name.
            let names = stride(from: 1, to: quoted.count, by: 2).map { String(quoted[$0]) }
            return Reference(file: String(parts[1]), names: names)
        }
    }

    @Test("every test the Promises article names is in the file it names")
    func namedTestsExist() throws {
        let page = try String(
            contentsOf: packageRoot.appendingPathComponent("Sources/Courier/Documentation.docc/Promises.md"),
            encoding: .utf8
        )
        let references = Self.references(in: page)
        #expect(references.count >= 15)
        for reference in references {
            #expect(!reference.names.isEmpty, "\(reference.file) names no test")
            let url = packageRoot.appendingPathComponent(reference.file)
            let source = try #require(try? String(contentsOf: url, encoding: .utf8), "\(reference.file) is missing")
            for name in reference.names {
                let found = source.contains("\"\(name)\"")
                #expect(found, "\(reference.file) has no test named \"\(name)\"")
            }
        }
    }

    @Test("the check finds a name that is not in its file, and a file that is not there")
    func checkCanFail() {
        let page = """
            - `Tests/CourierTests/Retry/RetryTests.swift`: "a test that was
              never written", "a CancellationError is never retried"
            """
        let references = Self.references(in: page)
        #expect(references.count == 1)
        #expect(references.first?.names == ["a test that was never written", "a CancellationError is never retried"])
        let source = (try? String(contentsOf: packageRoot.appendingPathComponent(references[0].file), encoding: .utf8))
        #expect(source?.contains("\"a test that was never written\"") == false)
        #expect(source?.contains("\"a CancellationError is never retried\"") == true)
    }
}
