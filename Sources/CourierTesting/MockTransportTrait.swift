#if canImport(Testing)
public import Courier
public import Testing

/// A Swift Testing trait that gives each test (and each case of a parameterized test) its own transport,
/// installed in a task-local scope, and fails the test when a mock's expectations were not met.
///
/// Make one with `.mockTransport { routes }`, `.mockTransport(someMock)` or `.testTransport(anyTransport)`,
/// and put a wrapper around the mock with ``through(_:)``:
///
/// ```swift
/// @Test(.mockTransport {
///     MockRoute.post("/login").replies(.json(Token(value: "t1"))).expectCalls(1)
///     MockRoute.get("/me").matchingHeader("Authorization", "Bearer t1").replies(.json(me))
/// })
/// func signsInThenLoadsTheProfile() async throws {
///     let client = Client(baseURL: base, transport: TestTransport())
///     let profile = try await AccountService(client: client).signIn(user: "ada", password: "pw")
///     #expect(profile == me)
/// }
/// ```
///
/// During the test, ``TestTransport`` sends to the installed transport, and ``MockTransport/current`` is
/// the mock (for checking what was sent). Tests with different traits run in parallel without seeing
/// each other's transport: there is no shared global state. (A client they share still shares its middleware's
/// state: a coalescing or caching layer can answer one test with another's response. Give each test its own
/// client when its stack keeps state.)
///
/// After the test, the trait records an `Issue` for each of the mock's ``MockTransport/unmetExpectations``
/// — a route called a wrong number of times (reported where `expectCalls` is written) or a request that
/// matched no route (reported where the trait is written) — even when the code under test swallowed the
/// error.
///
/// That holds wherever the trait is written: in `@Test(…)`, in `@Suite(…)`, or in a helper. In the two
/// attributes, Swift gives `#line` the line of the function or type the macro is attached to, so the trait
/// reads the attribute in the source file to find where each `expectCalls` (and the trait itself) is written;
/// routes made in a loop there are reported at their one `expectCalls`. Should the source file be missing
/// when the tests run, issues are reported at the declaration.
///
/// On a suite, the trait applies to every test in it, and each test still gets a fresh transport. A trait
/// on a test replaces one inherited from its suite (or from an enclosing suite): only the trait nearest the test
/// installs its transport, and only its mock's expectations are checked.
public struct MockTransportTrait: TestTrait, SuiteTrait, TestScoping {
    /// Tells this trait (and its copies) from every other one, `through(_:)`'s included.
    private final class Identity: Sendable {}

    private let makeTransport: @Sendable () -> (transport: any Transport, mock: MockTransport?)
    private let sourceLocation: SourceLocation
    private let identity = Identity()

    /// How many scopes of the nearest trait's copies enclose the current one: a trait value written on a suite
    /// and again on its test provides two nested scopes, and only the innermost installs a mock.
    @TaskLocal private static var enclosingCopies = 0

    /// Applies to every test in a suite, each with a fresh transport.
    public var isRecursive: Bool { true }

    /// Creates a trait that installs what `makeTransport` makes, fresh for each test case.
    ///
    /// - Parameters:
    ///   - makeTransport: Makes the transport for one test case.
    ///   - sourceLocation: Where unmatched requests are reported.
    public init(
        _ makeTransport: @escaping @Sendable () -> any Transport,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        self.makeTransport = {
            let transport = makeTransport()
            return (transport, transport as? MockTransport)
        }
        self.sourceLocation = sourceLocation
    }

    init(
        sourceLocation: SourceLocation,
        _ makeTransport: @escaping @Sendable () -> (transport: any Transport, mock: MockTransport?)
    ) {
        self.makeTransport = makeTransport
        self.sourceLocation = sourceLocation
    }

    /// Returns a copy that puts `wrapper` around each fresh transport: the test talks to the wrapper (a
    /// ``FaultInjectingTransport``, a ``HoldingTransport``), while the mock stays
    /// ``MockTransport/current`` and its unmet expectations still fail the test.
    ///
    /// ```swift
    /// @Test(.mockTransport {
    ///     MockRoute.get("/me").replies(.json(me)).expectCalls(1...)
    /// }.through {
    ///     FaultInjectingTransport(wrapping: $0, seed: 7, faults: [.droppedConnection(rate: 0.3)])
    /// })
    /// func survivesDroppedConnections() async throws { … }
    /// ```
    ///
    /// - Parameter wrapper: Makes the transport the test talks to, around the fresh one.
    public func through(_ wrapper: @escaping @Sendable (any Transport) -> any Transport) -> MockTransportTrait {
        let makeTransport = self.makeTransport
        return MockTransportTrait(sourceLocation: sourceLocation) {
            let (transport, mock) = makeTransport()
            return (wrapper(transport), mock)
        }
    }

    /// This trait, for each case of a test whose traits name no `MockTransportTrait` after it; `nil` otherwise.
    ///
    /// Swift Testing gives a test its suites' recursive traits before its own, and runs the scope of every one of
    /// them: without this, a suite's trait would install its mock around the test's own and then check that mock's
    /// expectations against a test that never used it.
    ///
    /// - Parameters:
    ///   - test: The test or suite.
    ///   - testCase: The test case, or `nil` for a suite or the test as a whole.
    /// - Returns: `self` when this trait installs the test case's transport.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> MockTransportTrait? {
        guard !test.isSuite, testCase != nil else { return nil }
        let nearest = test.traits.last { $0 is MockTransportTrait } as? MockTransportTrait
        return nearest.map { $0.identity === identity } ?? true ? self : nil
    }

    /// How many of `test`'s traits are copies of this one (the same value on a suite and on the test).
    private func copies(in test: Test) -> Int {
        test.traits.lazy.compactMap { $0 as? MockTransportTrait }.filter { $0.identity === identity }.count
    }

    /// Installs a fresh transport around the test, then reports the mock's unmet expectations.
    ///
    /// - Parameters:
    ///   - test: The test.
    ///   - testCase: The test case, for a parameterized test.
    ///   - function: The test's body.
    /// - Throws: What the test throws.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let enclosing = Self.enclosingCopies
        guard enclosing + 1 >= copies(in: test) else {
            // An outer copy of the trait the test names again: the innermost one installs the test's mock.
            try await Self.$enclosingCopies.withValue(enclosing + 1, operation: function)
            return
        }
        let (transport, mock) = makeTransport()
        do {
            try await MockTransport.$current.withValue(mock) {
                try await TestTransport.$current.withValue(transport, operation: function)
            }
        } catch {
            mock?.recordUnmetExpectations(defaultLocation: sourceLocation)
            throw error
        }
        mock?.recordUnmetExpectations(defaultLocation: sourceLocation)
    }
}

extension Trait where Self == MockTransportTrait {
    /// A fresh routed ``MockTransport`` for each test, installed for ``TestTransport``; unmet
    /// expectations fail the test.
    ///
    /// ```swift
    /// @Test(.mockTransport {
    ///     MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }
    /// })
    /// func loadsUsers() async throws { … }
    /// ```
    ///
    /// - Parameters:
    ///   - unmatched: The reply to a request no route matches; `nil` (the default) fails the request and
    ///     the test.
    ///   - sourceLocation: Where unmatched requests are reported.
    ///   - routes: The routes, tried in order.
    public static func mockTransport(
        unmatched: MockResponse? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        @MockRouteBuilder _ routes: @escaping @Sendable () -> [MockRoute]
    ) -> Self {
        MockTransportTrait({ MockTransport(routes: routes(), unmatched: unmatched) }, sourceLocation: sourceLocation)
    }

    /// A mock made fresh for each test (the expression is evaluated once per test case), installed for
    /// ``TestTransport``; unmet expectations fail the test.
    ///
    /// ```swift
    /// @Test(.mockTransport(MockTransport(.serviceUnavailable(), then: .json(user))))
    /// func retriesOnce() async throws { … }
    /// ```
    ///
    /// - Parameters:
    ///   - mock: Makes the mock.
    ///   - sourceLocation: Where unmatched requests are reported.
    public static func mockTransport(
        _ mock: @autoclosure @escaping @Sendable () -> MockTransport,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        MockTransportTrait({ mock() }, sourceLocation: sourceLocation)
    }

    /// Any transport, made fresh for each test (the expression is evaluated once per test case) and
    /// installed for ``TestTransport``. When it is a ``MockTransport``, its unmet expectations fail the
    /// test.
    ///
    /// ```swift
    /// @Test(.testTransport(FaultInjectingTransport(wrapping: MockTransport.ok, seed: 7, faults: [.droppedConnection(rate: 0.2)])))
    /// func survivesDroppedConnections() async throws { … }
    /// ```
    ///
    /// - Parameters:
    ///   - transport: Makes the transport.
    ///   - sourceLocation: Where unmatched requests are reported.
    public static func testTransport(
        _ transport: @autoclosure @escaping @Sendable () -> any Transport,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        MockTransportTrait(transport, sourceLocation: sourceLocation)
    }
}

extension MockTransport {
    /// Records a test issue for each of ``unmetExpectations``: a route called a wrong number of times is
    /// reported where its `expectCalls` is written, anything else at `sourceLocation`.
    ///
    /// The `.mockTransport` trait calls this after each test; call it yourself when you install a mock
    /// another way.
    ///
    /// - Parameter sourceLocation: Where to report problems that have no place of their own.
    public func verify(sourceLocation: SourceLocation = #_sourceLocation) {
        recordUnmetExpectations(defaultLocation: sourceLocation)
    }

    fileprivate func recordUnmetExpectations(defaultLocation: SourceLocation) {
        let failures = expectationFailures
        guard !failures.isEmpty else { return }
        let routes = self.routes
        for failure in failures {
            let location =
                failure.routeIndex.flatMap { Self.writtenLocation(ofExpectationOfRouteAt: $0, in: routes) }
                ?? Self.writtenLocation(of: defaultLocation)
            Issue.record(Comment(rawValue: failure.message), sourceLocation: location)
        }
    }

    /// Where the `expectCalls` of `routes[index]` is written.
    ///
    /// Written inside `@Test(…)` or `@Suite(…)`, every route's position is the declaration's (see
    /// `AttributeCallLocator`): the routes captured there are matched, in order, with the `expectCalls` calls
    /// written in the attribute. When their numbers differ (routes made in a loop or under an `if`), one call
    /// still places them all; otherwise the trait's own position does.
    private static func writtenLocation(ofExpectationOfRouteAt index: Int, in routes: [MockRoute]) -> SourceLocation? {
        guard let position = routes[index].expectationPosition else { return nil }
        let captured = SourceLocation(
            fileID: position.fileID,
            filePath: position.filePath,
            line: position.line,
            column: position.column
        )
        guard let calls = captured.attributeCalls else { return captured }
        let expectations = calls.filter { $0.name == "expectCalls" }
        let siblings = routes.indices.filter { routes[$0].expectationPosition.map { $0 == position } ?? false }
        if expectations.count == siblings.count, let rank = siblings.firstIndex(of: index) {
            return captured.moved(to: expectations[rank])
        }
        if expectations.count == 1 { return captured.moved(to: expectations[0]) }
        return captured.moved(to: onlyTrait(in: calls))
    }

    /// Where the trait made at `location` is written: `location` itself, unless that is the position of the
    /// declaration whose `@Test(…)`/`@Suite(…)` holds the trait.
    private static func writtenLocation(of location: SourceLocation) -> SourceLocation {
        guard let calls = location.attributeCalls else { return location }
        return location.moved(to: onlyTrait(in: calls))
    }

    /// The one call among `calls` that is not an `expectCalls`, if there is exactly one: the trait.
    private static func onlyTrait(in calls: [AttributeCallLocator.Call]) -> AttributeCallLocator.Call? {
        let traits = calls.filter { $0.name != "expectCalls" }
        return traits.count == 1 ? traits[0] : nil
    }
}

extension SourceLocation {
    /// The calls written in the `@Test(…)`/`@Suite(…)` attributes of the declaration at this location, or
    /// `nil` when it is not such a declaration or its file cannot be read.
    fileprivate var attributeCalls: [AttributeCallLocator.Call]? {
        AttributeCallLocator.calls(inAttributesOfDeclarationAt: line, column: column, filePath: filePath)
    }

    /// This location moved to where `call` is written, or itself when there is no call.
    fileprivate func moved(to call: AttributeCallLocator.Call?) -> SourceLocation {
        guard let call else { return self }
        return SourceLocation(fileID: fileID, filePath: filePath, line: call.line, column: call.column)
    }
}
#endif
