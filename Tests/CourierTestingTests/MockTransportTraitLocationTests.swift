import Courier
import Foundation
import Testing

@testable import CourierTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// A `.mockTransport` trait written inside `@Test(…)` or `@Suite(…)` is evaluated in code the testing library's
// macros generate, where `#line` is the declaration's line. These tests take the trait the macro made (from
// `Test.current`), run a scope of it that breaks its expectations, and check where the issues are reported.
// Each expected line is found by a marker comment on it, so moving the code moves nothing the tests rely on.

private let client = Client(baseURL: testBase, transport: TestTransport())

/// The line of this file that holds `marker`, which must be on exactly one line.
private func line(of marker: String) throws -> Int {
    let lines = try String(contentsOfFile: #filePath, encoding: .utf8).split(
        separator: "\n",
        omittingEmptySubsequences: false
    )
    let found = lines.indices.filter { lines[$0].contains(marker) && !lines[$0].contains("line(of:") }
    try #require(found.count == 1, "marker \(marker) is on \(found.count) lines")
    return found[0] + 1
}

/// Runs a fresh scope of the `.mockTransport` trait the current test got from its attribute (or its suite's),
/// returning the issues it recorded as (message, line, fileID).
private func issuesOfTraitScope(
    _ body: @escaping @Sendable () async throws -> Void
) async throws -> [(message: String, line: Int?, fileID: String?)] {
    let test = try #require(Test.current)
    let trait = try #require(test.traits.compactMap { $0 as? MockTransportTrait }.first)
    let issues = Locked<[(message: String, line: Int?, fileID: String?)]>([])
    try await withKnownIssue {
        try await trait.provideScope(for: test, testCase: Test.Case.current, performing: body)
    } matching: { issue in
        let message = issue.comments.map(\.rawValue).joined()
        issues.withLock { $0.append((message, issue.sourceLocation?.line, issue.sourceLocation?.fileID)) }
        return true
    }
    return issues.value
}

@Suite("Where a .mockTransport trait reports a failed expectation")
struct MockTransportTraitLocationTests {
    @Test(
        "written in @Test(…), each route's failed expectation is reported at its expectCalls, not at the function",
        .mockTransport {
            MockRoute.get("/in-test/free")
            MockRoute.post("/in-test/first").expectCalls(0)  // marker: first route in @Test
            MockRoute.get("/in-test/second")
                .replies(.ok)
                .expectCalls(2)  // marker: second route in @Test
        }
    )
    func inTestAttribute() async throws {
        let issues = try await issuesOfTraitScope {
            _ = try await client.send(request(.post, "/in-test/first"))
        }
        // The test's own mock (from the same trait) must be met.
        for _ in 0..<2 { _ = try await client.send(request(.get, "/in-test/second")) }

        let first = try line(of: "marker: first route in @Test")
        let second = try line(of: "marker: second route in @Test")
        #expect(
            issues.map(\.message) == [
                "POST /in-test/first expected exactly 0 calls, got 1 call",
                "GET /in-test/second expected exactly 2 calls, got 0 calls",
            ]
        )
        #expect(issues.map(\.line) == [first, second])
        #expect(issues.allSatisfy { $0.fileID == #fileID })
    }

    @Test(
        "written in @Test(…), an unmatched request is reported where the trait is written",
        .mockTransport {  // marker: trait in @Test
            MockRoute.get("/known")
        }
    )
    func unmatchedInTestAttribute() async throws {
        let issues = try await issuesOfTraitScope {
            _ = try? await client.send(request(.get, "/unknown"))
        }

        #expect(issues.map(\.message) == ["unexpected request GET /unknown: no route matches"])
        #expect(issues.map(\.line) == [try line(of: "marker: trait in @Test")])
    }

    @Test(
        "routes made in a loop in @Test(…) are reported at their one expectCalls",
        .mockTransport {
            for path in ["/loop/a", "/loop/b"] {
                MockRoute.get(path).expectCalls(1)  // marker: route in a loop
            }
        }
    )
    func loopInTestAttribute() async throws {
        let issues = try await issuesOfTraitScope {}
        _ = try await client.send(request(.get, "/loop/a"))  // the test's own mock must be met
        _ = try await client.send(request(.get, "/loop/b"))

        let line = try line(of: "marker: route in a loop")
        #expect(issues.count == 2)
        #expect(issues.allSatisfy { $0.line == line })
    }
}

@Suite(
    "Where a .mockTransport trait written in @Suite(…) reports a failed expectation",
    .mockTransport {
        MockRoute.get("/in-suite/free")
        MockRoute.delete("/in-suite/once").expectCalls(1)  // marker: route in @Suite
    }
)
struct MockTransportSuiteTraitLocationTests {
    @Test("a test of the suite gets its failed expectation reported at the route's expectCalls")
    func inSuiteAttribute() async throws {
        let issues = try await issuesOfTraitScope {}
        _ = try await client.send(request(.delete, "/in-suite/once"))  // the test's own mock must be met

        #expect(issues.map(\.message) == ["DELETE /in-suite/once expected exactly 1 call, got 0 calls"])
        #expect(issues.map(\.line) == [try line(of: "marker: route in @Suite")])
        #expect(issues.allSatisfy { $0.fileID == #fileID })
    }

    @Test("the suite's own mock is met: it must be called once here as well")
    func suiteMockMet() async throws {
        _ = try await client.send(request(.delete, "/in-suite/once"))
        #expect(MockTransport.current?.routeCallCounts == [0, 1])
    }
}

@Suite("Finding calls in @Test and @Suite attributes")
struct AttributeCallLocatorTests {
    /// Writes `lines` to a temporary file and asks for the calls in the attributes of the declaration at
    /// `line`:`column`.
    private func calls(in lines: [String], declarationAt line: Int, column: Int) throws -> [AttributeCallLocator.Call]?
    {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("locator-\(UUID().uuidString).swift")
        try lines.joined(separator: "\n").write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        return AttributeCallLocator.calls(inAttributesOfDeclarationAt: line, column: column, filePath: url.path)
    }

    @Test("strings, interpolations, raw strings and comments hide nothing and fake nothing")
    func trickySource() throws {
        let source = [
            #"@Suite(.serialized)"#,  // 1
            #"struct S {"#,  // 2
            #"    /// A doc comment: .expectCalls(9) is not a call"#,  // 3
            #"    @Test("a ) name with \(f("(\")")) inside", .mockTransport {"#,  // 4
            #"        /* .expectCalls( /* nested */ still a comment */"#,  // 5
            ##"        MockRoute.get(#"/a")"#) .expectCalls(1)"##,  // 6
            "        MockRoute.get(\"\"\"",  // 7
            #"            /b .expectCalls(2) ")" "#,  // 8
            #"            """).expectCalls(3)"#,  // 9
            #"    }, .timeLimit(.minutes(1)))"#,  // 10
            #"    @MainActor private(set) static func t() {}"#,  // 11
            #"}"#,  // 12
        ]
        let found = try calls(in: source, declarationAt: 11, column: 5 + "@MainActor private(set) ".utf8.count)
        #expect(
            found == [
                AttributeCallLocator.Call(name: "mockTransport", line: 4, column: 63),
                AttributeCallLocator.Call(name: "expectCalls", line: 6, column: 45),
                AttributeCallLocator.Call(name: "expectCalls", line: 9, column: 29),
            ]
        )
    }

    @Test("a position that is not the start of a declaration with @Test or @Suite finds nothing")
    func notADeclaration() throws {
        let source = [
            #"@available(macOS 15, *)"#,  // 1
            #"func f() {"#,  // 2
            #"    let route = MockRoute.get("/x").expectCalls(1)"#,  // 3
            #"}"#,  // 4
        ]
        #expect(try calls(in: source, declarationAt: 2, column: 1) == nil)
        #expect(try calls(in: source, declarationAt: 3, column: 5) == nil)
        #expect(try calls(in: source, declarationAt: 3, column: 50) == nil)
        #expect(AttributeCallLocator.calls(inAttributesOfDeclarationAt: 1, column: 1, filePath: "/no/such/file") == nil)
    }
}
