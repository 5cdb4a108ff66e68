import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One client for every test in this file: each test's trait decides where its requests go.
private let sharedClient = Client(baseURL: testBase, transport: TestTransport())

@Suite("TestTransport and the .mockTransport trait")
struct TestTransportTraitTests {
    /// Asks the shared client who answers, and checks that the mock of the test's own trait did, once.
    private func expectAnswer(from name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let who: String = try await sharedClient.send(.get("/who"))
        #expect(who == name, sourceLocation: sourceLocation)
        #expect(MockTransport.current?.requests.count == 1, sourceLocation: sourceLocation)
    }

    @Test("a test with a trait talks to its own mock through a shared client", .mockAnswering(as: "A"))
    func ownMockA() async throws {
        try await expectAnswer(from: "A")
    }

    @Test("a test running next to it with another trait talks to another mock", .mockAnswering(as: "B"))
    func ownMockB() async throws {
        try await expectAnswer(from: "B")
    }

    @Test(
        "each case of a parameterized test gets a fresh mock",
        .mockTransport { MockRoute.get("/count").expectCalls(1) },
        arguments: 0..<8
    )
    func freshPerCase(index: Int) async throws {
        let _: EmptyResponse = try await sharedClient.send(.get("/count", query: ["case": .init(index)]))
        let mock = try #require(MockTransport.current)
        #expect(mock.requests.map { $0.queryValue("case") } == ["\(index)"])
    }

    @Test(
        "a mock given as an expression is made again for every case",
        .mockTransport(MockTransport(.status(503), then: .ok)),
        arguments: 0..<4
    )
    func autoclosurePerCase(index: Int) async throws {
        // A shared mock would answer 200 from the second case on.
        let (_, response) = try await sharedClient.send(request(.get, "/any"))
        #expect(response.statusCode == 503)
    }

    @Test("concurrent scopes with different transports never see each other's", .timeLimit(.minutes(1)))
    func isolationUnderConcurrency() async throws {
        let count = 24
        let arrived = Arrivals()
        let release = Gate()
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<count {
                group.addTask {
                    let mock = MockTransport {
                        MockRoute.get("/who").replies(.text("mock \(index)").held(until: release, counting: arrived))
                    }
                    return try await withTestTransport(mock) {
                        let who: String = try await sharedClient.send(.get("/who"))
                        #expect(MockTransport.current === mock)
                        #expect(mock.requests.count == 1)
                        return (index, who)
                    }
                }
            }
            // Every request is inside its own mock at the same moment before any is answered.
            await arrived.wait(for: count)
            release.open()
            var answers: [Int: String] = [:]
            for try await (index, who) in group { answers[index] = who }
            return answers
        }
        #expect(answers.count == count)
        for (index, who) in answers { #expect(who == "mock \(index)") }
    }

    @Test(
        "Task {} inherits the transport; a detached task using a client made outside the scope does not",
        .mockTransport {
            MockRoute.get("/inherited").replies(.text("yes"))
        }
    )
    func inheritance() async throws {
        let inherited = try await Task { () -> String in try await sharedClient.send(.get("/inherited")) }.value
        #expect(inherited == "yes")
        let detached = Task.detached { () -> String in try await sharedClient.send(.get("/inherited")) }
        let error = await #expect(throws: CourierError.self) { try await detached.join() }
        let underlying = try #require(error?.underlying as? MockTransportError)
        #expect(underlying.message.contains("no transport is installed for this task"))
    }

    @Test(
        "a TestTransport made in a scope with the current transport as fallback serves detached tasks",
        .mockTransport {
            MockRoute.get("/detached").replies(.text("scoped"))
        }
    )
    func capturedInScope() async throws {
        let client = Client(baseURL: testBase, transport: TestTransport(fallback: TestTransport.current))
        let text = try await Task.detached { () -> String in try await client.send(.get("/detached")) }.value
        #expect(text == "scoped")
        #expect(MockTransport.current?.requests.count == 1)
    }

    @Test("an installed transport wins over the fallback")
    func innerScopeWins() async throws {
        let outer = MockTransport(.status(201))
        let inner = MockTransport(.status(202))
        let status = try await withTestTransport(outer) {
            let transport = TestTransport(fallback: TestTransport.current)
            return try await withTestTransport(inner) { try await transport.send(request(.get, "/x")).1.statusCode }
        }
        #expect(status == 202)
        #expect(outer.requests.isEmpty)
    }

    @Test("without an installed transport, TestTransport fails with a message that says what to do")
    func nothingInstalled() async throws {
        let error = await #expect(throws: MockTransportError.self) {
            try await TestTransport().send(request(.get, "/me"))
        }
        #expect(error?.message.contains("no transport is installed for this task (GET /me)") == true)
        #expect(error?.message.contains(".mockTransport") == true)
    }

    @Test("a fallback answers when nothing is installed, and an installed transport wins over it")
    func fallback() async throws {
        let transport = TestTransport(fallback: MockTransport(.status(204)))
        #expect(try await transport.send(request(.get, "/x")).1.statusCode == 204)
        let status = try await withTestTransport(MockTransport(.status(202))) {
            try await transport.send(request(.get, "/x")).1.statusCode
        }
        #expect(status == 202)
    }

    @Test(
        "testTransport installs any transport; MockTransport.current is then nil",
        .testTransport(
            FaultInjectingTransport(wrapping: MockTransport(.status(207)), seed: 1, faults: [])
        )
    )
    func anyTransport() async throws {
        #expect(MockTransport.current == nil)
        #expect(TestTransport.current is FaultInjectingTransport)
        #expect(try await sharedClient.send(request(.get, "/x")).1.statusCode == 207)
    }

    @Test(
        "a wrapped mock: the test talks to the wrapper, MockTransport.current is the mock",
        .mockTransport {
            MockRoute.get("/me").replies(.text("me")).expectCalls(1)
        }.through {
            FaultInjectingTransport(wrapping: $0, seed: 1, faults: [.status(503).forRequests(0..<1)])
        }
    )
    func wrappedMock() async throws {
        let (_, first) = try await sharedClient.send(request(.get, "/me"))
        let (_, second) = try await sharedClient.send(request(.get, "/me"))
        #expect(first.statusCode == 503)
        #expect(second.statusCode == 200)
        #expect(TestTransport.current is FaultInjectingTransport)
        #expect(MockTransport.current?.requests.count == 1)
    }

    @Test("the trait records an issue where expectCalls is written when a route was not called enough")
    func reportsUnmetExpectations() async throws {
        let expectationLine = #line + 1
        let trait: MockTransportTrait = .mockTransport { MockRoute.post("/token").expectCalls(1) }
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {}
        } matching: {
            $0.says("POST /token expected exactly 1 call, got 0 calls", at: expectationLine)
        }
    }

    @Test("the trait records an unmatched request even when the code under test swallowed the error")
    func reportsSwallowedUnmatchedRequests() async throws {
        let traitLine = #line + 1
        let trait: MockTransportTrait = .mockTransport { MockRoute.get("/known") }
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                _ = try? await sharedClient.send(request(.get, "/unknown"))
            }
        } matching: {
            $0.says("unexpected request GET /unknown: no route matches", at: traitLine)
        }
    }

    @Test("verify() records a mock's unmet expectations when no trait installed it")
    func verifyByHand() async throws {
        let expectationLine = #line + 1
        let api = MockTransport { MockRoute.get("/me").expectCalls(2) }
        _ = try await withTestTransport(api) { try await sharedClient.send(request(.get, "/me")) }
        withKnownIssue {
            api.verify()
        } matching: {
            $0.says("GET /me expected exactly 2 calls, got 1 call", at: expectationLine)
        }
    }

    @Test("the trait records nothing when every expectation is met")
    func quietWhenMet() async throws {
        let trait: MockTransportTrait = .mockTransport { MockRoute.post("/token").expectCalls(1) }
        let test = try #require(Test.current)
        let calls = Locked(0)
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            _ = try await sharedClient.send(request(.post, "/token"))
            calls.withLock { $0 += 1 }
        }
        #expect(calls.value == 1)
    }

    @Test("the trait still reports and then rethrows when the test body throws")
    func reportsAndRethrows() async throws {
        struct Stop: Error {}
        let trait: MockTransportTrait = .mockTransport { MockRoute.get("/needed").expectCalls(1) }
        let test = try #require(Test.current)
        let seen = Locked<[String]>([])
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: Test.Case.current) { throw Stop() }
        } matching: { issue in
            if issue.error is Stop {
                seen.withLock { $0.append("rethrown") }
                return true
            }
            if issue.comments.map(\.rawValue) == ["GET /needed expected exactly 1 call, got 0 calls"] {
                seen.withLock { $0.append("reported") }
                return true
            }
            return false
        }
        #expect(seen.value == ["reported", "rethrown"])
    }
}

@Suite("A .mockTransport trait on a suite", .mockTransport { MockRoute.get("/suite").replies(.text("suite")) })
struct SuiteLevelMockTransportTests {
    @Test("the first test gets its own mock from the suite's trait")
    func first() async throws {
        let text: String = try await sharedClient.send(.get("/suite"))
        #expect(text == "suite")
        #expect(MockTransport.current?.requests.count == 1)
    }

    @Test("the second test gets another fresh mock")
    func second() async throws {
        let _: String = try await sharedClient.send(.get("/suite"))
        let _: String = try await sharedClient.send(.get("/suite"))
        #expect(MockTransport.current?.requests.count == 2)
    }

    @Test("a trait on the test replaces the suite's", .mockTransport { MockRoute.get("/suite").replies(.text("test")) })
    func overridden() async throws {
        let text: String = try await sharedClient.send(.get("/suite"))
        #expect(text == "test")
    }
}

@Suite(
    "A .mockTransport trait on a suite whose routes expect calls",
    .mockTransport { MockRoute.get("/expected").replies(.text("suite")).expectCalls(1) }
)
struct SuiteLevelExpectationTests {
    @Test("the suite's mock is met by a test that uses it")
    func usesTheSuitesMock() async throws {
        let text: String = try await sharedClient.send(.get("/expected"))
        #expect(text == "suite")
    }

    // Fails with "GET /expected expected exactly 1 call, got 0 calls" should the suite's mock still be installed
    // and checked around this test's own.
    @Test(
        "a trait on the test replaces the suite's: the suite's expectations are not checked against it",
        .mockTransport { MockRoute.get("/expected").replies(.text("test")) }
    )
    func replacesTheSuitesMock() async throws {
        let text: String = try await sharedClient.send(.get("/expected"))
        #expect(text == "test")
        #expect(MockTransport.current?.requests.count == 1)
    }
}

/// One trait value, written on a suite and again on one of its tests.
private let sharedExpectingTrait: MockTransportTrait = .mockTransport {
    MockRoute.get("/shared").replies(.text("shared")).expectCalls(1)
}

@Suite("One .mockTransport trait value on a suite and on its test", sharedExpectingTrait)
struct SharedTraitValueTests {
    // Fails with "GET /shared expected exactly 1 call, got 0 calls" should the value install two mocks, one
    // around the other.
    @Test("installs one mock for the test, whose expectations the test meets", sharedExpectingTrait)
    func onceForTheTest() async throws {
        let text: String = try await sharedClient.send(.get("/shared"))
        #expect(text == "shared")
    }
}

extension Trait where Self == MockTransportTrait {
    /// A `.mockTransport` trait whose mock answers `GET /who` with `name`.
    fileprivate static func mockAnswering(as name: String) -> Self {
        .mockTransport { MockRoute.get("/who").replies(.text(name)) }
    }
}

extension Issue {
    /// Whether this issue says exactly `comment` and was recorded at `line`.
    fileprivate func says(_ comment: String, at line: Int) -> Bool {
        comments.map(\.rawValue) == [comment] && sourceLocation?.line == line
    }
}
