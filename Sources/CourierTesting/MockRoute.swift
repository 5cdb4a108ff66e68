public import Courier
public import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a ``MockTransport`` answers requests with a given method and path: a small, readable
/// description of one endpoint of a fake API.
///
/// ```swift
/// let api = MockTransport {
///     MockRoute.get("/users/:id") { request in
///         .json(User(id: request.parameters["id"]!, name: "Ada"))
///     }
///     MockRoute.post("/login")
///         .replies(.status(401), then: .json(Token(value: "t2")))
///         .expectCalls(2)
///     MockRoute.get("/search?q=swift").replies(.json(results))
///     MockRoute.get("/me").matchingHeader("Authorization", "Bearer t2").replies(.json(me))
///     MockRoute.get("/me").replies(.unauthorized())
///     MockRoute.delete("/users/:id").replies(.networkConnectionLost)
/// }
/// ```
///
/// **Patterns**: `:name` matches one path segment and captures it into ``MockRequest/parameters``; `*`
/// matches any one segment; a final `**` matches the rest of the path. A `?name=value` suffix requires
/// those query items (other items may be present). Empty segments are ignored (`/users/` is `/users`).
/// The pattern is matched against the whole URL path, including any base-URL prefix such as `/v1`.
///
/// **Replies**: a route replies with its ``replies`` in order, one per call, and repeats the last one
/// when it runs out; without any, it replies `200 OK`. A route made with a closure asks it on every call.
///
/// **Order**: a mock tries its routes in the order they were written and answers with the first that
/// matches, so put narrower routes (with header or query conditions) before broader ones.
///
/// **Expectations**: ``expectCalls(_:fileID:filePath:line:column:)-(Int,_,_,_,_)`` says how often a route must be called;
/// ``MockTransport/unmetExpectations`` lists what was not met, and the `.mockTransport` test trait
/// records it as a test issue.
public struct MockRoute: Sendable, CustomStringConvertible {
    /// Where an expectation was written, for reporting it.
    public struct SourcePosition: Sendable, Hashable {
        /// The file ID (`Module/File.swift`).
        public var fileID: String
        /// The file path.
        public var filePath: String
        /// The line.
        public var line: Int
        /// The column.
        public var column: Int

        /// Creates a position.
        ///
        /// - Parameters:
        ///   - fileID: The file ID.
        ///   - filePath: The file path.
        ///   - line: The line.
        ///   - column: The column.
        public init(fileID: String, filePath: String, line: Int, column: Int) {
            self.fileID = fileID
            self.filePath = filePath
            self.line = line
            self.column = column
        }
    }

    /// A condition on a request besides its method and path.
    struct Condition: Sendable {
        let description: String
        let test: @Sendable (MockRequest) -> Bool
    }

    /// The method to match, or `nil` for any.
    public var method: HTTPMethod?

    /// The path pattern, for example `/users/:id` (with an optional `?name=value` query part).
    public var path: String {
        didSet { pattern = PathPattern(Self.pathPart(of: path)) }
    }

    /// The replies, in order; the last one repeats.
    public var replies: [MockReply]

    /// The first reply; setting it replaces all replies.
    public var reply: MockReply {
        get { replies.first ?? .ok }
        set { replies = [newValue] }
    }

    /// How many calls the route must get, if that matters.
    public private(set) var expectedCalls: ClosedRange<Int>?

    /// Where ``expectedCalls`` was written.
    public private(set) var expectationPosition: SourcePosition?

    private(set) var pattern: PathPattern
    private(set) var conditions: [Condition] = []
    private(set) var delay: (@Sendable () async throws -> Void)?
    private var delayDescription: String?

    /// Creates a route.
    ///
    /// - Parameters:
    ///   - method: The method to match, or `nil` for any.
    ///   - path: The path pattern, for example `/users/:id`.
    ///   - reply: The reply.
    public init(_ method: HTTPMethod?, _ path: String, _ reply: MockReply = .ok) {
        self.method = method
        self.path = path
        self.pattern = PathPattern(Self.pathPart(of: path))
        self.replies = [reply]
        for (name, value) in Self.queryPart(of: path) {
            conditions.append(Self.queryCondition(name, value))
        }
    }

    /// Creates a route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - method: The method to match, or `nil` for any.
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request, or throws (the error reaches the caller).
    public init(
        _ method: HTTPMethod?,
        _ path: String,
        handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) {
        self.init(method, path, .handler(handler))
    }

    // MARK: Factories

    /// A `GET` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func get(_ path: String) -> MockRoute { MockRoute(.get, path) }

    /// A `GET` route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func get(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(.get, path, handler: handler)
    }

    /// A `POST` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func post(_ path: String) -> MockRoute { MockRoute(.post, path) }

    /// A `POST` route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func post(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(.post, path, handler: handler)
    }

    /// A `PUT` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func put(_ path: String) -> MockRoute { MockRoute(.put, path) }

    /// A `PUT` route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func put(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(.put, path, handler: handler)
    }

    /// A `PATCH` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func patch(_ path: String) -> MockRoute { MockRoute(.patch, path) }

    /// A `PATCH` route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func patch(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(.patch, path, handler: handler)
    }

    /// A `DELETE` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func delete(_ path: String) -> MockRoute { MockRoute(.delete, path) }

    /// A `DELETE` route whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func delete(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(.delete, path, handler: handler)
    }

    /// A `HEAD` route that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func head(_ path: String) -> MockRoute { MockRoute(.head, path) }

    /// A route for any method that replies `200 OK` until you give it replies.
    ///
    /// - Parameter path: The path pattern.
    /// - Returns: The route.
    public static func any(_ path: String) -> MockRoute { MockRoute(nil, path) }

    /// A route for any method whose handler decides each reply.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Returns the reply for a request.
    /// - Returns: The route.
    public static func any(
        _ path: String,
        _ handler: @escaping @Sendable (MockRequest) async throws -> MockReply
    ) -> MockRoute {
        MockRoute(nil, path, handler: handler)
    }

    // MARK: Replies

    /// Returns a copy that replies `first` to the first call, then each of `rest` in turn, and repeats
    /// the last reply from then on.
    ///
    /// ```swift
    /// MockRoute.get("/me").replies(.unauthorized(), then: .json(me))
    /// ```
    ///
    /// - Parameters:
    ///   - first: The reply to the first call.
    ///   - rest: The replies to the next calls.
    /// - Returns: The changed route.
    public func replies(_ first: MockReply, then rest: MockReply...) -> MockRoute {
        var copy = self
        copy.replies = [first] + rest
        return copy
    }

    /// Returns a copy that replies with `replies` in order, repeating the last one.
    ///
    /// - Parameter replies: The replies; an empty list means `200 OK`.
    /// - Returns: The changed route.
    public func replies(sequence replies: [MockReply]) -> MockRoute {
        var copy = self
        copy.replies = replies.isEmpty ? [.ok] : replies
        return copy
    }

    /// Returns a copy whose handler decides each reply.
    ///
    /// - Parameter handler: Returns the reply for a request, or throws.
    /// - Returns: The changed route.
    public func replies(_ handler: @escaping @Sendable (MockRequest) async throws -> MockReply) -> MockRoute {
        var copy = self
        copy.replies = [.handler(handler)]
        return copy
    }

    /// Returns a copy that waits `duration` on `clock` before every reply.
    ///
    /// - Parameters:
    ///   - duration: The delay.
    ///   - clock: The clock to sleep on (a `ManualClock` in tests); `ContinuousClock` by default.
    /// - Returns: The changed route.
    public func delayed(by duration: Duration, on clock: some Clock<Duration> = ContinuousClock()) -> MockRoute {
        var copy = self
        copy.delay = { try await clock.sleep(for: duration) }
        copy.delayDescription = "after \(duration)"
        return copy
    }

    // MARK: Conditions

    /// Returns a copy that matches only requests with the query item `name` (and, when `value` is given,
    /// with that value).
    ///
    /// - Parameters:
    ///   - name: The item's name.
    ///   - value: The value it must have (percent-decoded), or `nil` for any.
    /// - Returns: The changed route.
    public func matchingQuery(_ name: String, _ value: String? = nil) -> MockRoute {
        var copy = self
        copy.conditions.append(Self.queryCondition(name, value))
        return copy
    }

    /// Returns a copy that matches only requests with all of these query items and values.
    ///
    /// - Parameter items: Names and the values they must have.
    /// - Returns: The changed route.
    public func matchingQuery(_ items: [String: String]) -> MockRoute {
        var copy = self
        for (name, value) in items.sorted(by: { $0.key < $1.key }) {
            copy.conditions.append(Self.queryCondition(name, value))
        }
        return copy
    }

    /// Returns a copy that matches only requests with the header `name` (and, when `value` is given, with
    /// exactly that value).
    ///
    /// ```swift
    /// MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(me))
    /// ```
    ///
    /// - Parameters:
    ///   - name: The header's name (case-insensitive).
    ///   - value: The value it must have, or `nil` for any.
    /// - Returns: The changed route.
    public func matchingHeader(_ name: String, _ value: String? = nil) -> MockRoute {
        var copy = self
        let shown = Redaction.isSensitiveHeader(name) ? Redaction.placeholder : (value ?? "*")
        copy.conditions.append(
            Condition(description: "\(name): \(shown)") { request in
                guard let actual = request.header(name) else { return false }
                return value == nil || actual == value
            }
        )
        return copy
    }

    /// Returns a copy that matches only requests whose JSON body decodes as `expected`'s type and equals it.
    ///
    /// - Parameters:
    ///   - expected: The body the request must carry.
    ///   - decoder: The decoder; a plain `JSONDecoder` by default.
    /// - Returns: The changed route.
    public func matchingBody<Body: Decodable & Equatable & Sendable>(
        _ expected: Body,
        decoder: JSONDecoder = JSONDecoder()
    ) -> MockRoute {
        var copy = self
        copy.conditions.append(
            Condition(description: "body == \(Body.self)") { request in
                (try? request.decodedBody(as: Body.self, decoder: decoder)) == expected
            }
        )
        return copy
    }

    /// Returns a copy that matches only requests for which `predicate` is `true`.
    ///
    /// - Parameters:
    ///   - description: How the condition reads in messages.
    ///   - predicate: Decides whether a request matches.
    /// - Returns: The changed route.
    public func matching(
        _ description: String = "custom condition",
        _ predicate: @escaping @Sendable (MockRequest) -> Bool
    ) -> MockRoute {
        var copy = self
        copy.conditions.append(Condition(description: description, test: predicate))
        return copy
    }

    // MARK: Expectations

    /// Returns a copy that must be called exactly `count` times.
    ///
    /// ```swift
    /// MockRoute.post("/oauth/token").replies(.json(token)).expectCalls(1)
    /// ```
    ///
    /// - Parameters:
    ///   - count: The number of calls.
    ///   - fileID: Where the expectation is written (an unmet expectation is reported there).
    ///   - filePath: The file's path.
    ///   - line: The line.
    ///   - column: The column.
    /// - Returns: The changed route.
    public func expectCalls(
        _ count: Int,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> MockRoute {
        expecting(count...count, SourcePosition(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Returns a copy that must be called a number of times within `range`.
    ///
    /// - Parameters:
    ///   - range: The acceptable numbers of calls.
    ///   - fileID: Where the expectation is written (an unmet expectation is reported there).
    ///   - filePath: The file's path.
    ///   - line: The line.
    ///   - column: The column.
    /// - Returns: The changed route.
    public func expectCalls(
        _ range: ClosedRange<Int>,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> MockRoute {
        expecting(range, SourcePosition(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Returns a copy that must be called at least `range.lowerBound` times.
    ///
    /// - Parameters:
    ///   - range: The smallest acceptable number of calls, as `1...`.
    ///   - fileID: Where the expectation is written (an unmet expectation is reported there).
    ///   - filePath: The file's path.
    ///   - line: The line.
    ///   - column: The column.
    /// - Returns: The changed route.
    public func expectCalls(
        _ range: PartialRangeFrom<Int>,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> MockRoute {
        expecting(
            range.lowerBound...Int.max,
            SourcePosition(fileID: fileID, filePath: filePath, line: line, column: column)
        )
    }

    private func expecting(_ range: ClosedRange<Int>, _ position: SourcePosition) -> MockRoute {
        var copy = self
        copy.expectedCalls = range
        copy.expectationPosition = position
        return copy
    }

    // MARK: Matching

    /// The captured path parameters when `request` matches the route, or `nil`.
    func match(_ request: URLRequest) -> [String: String]? {
        if let method, method != request.method { return nil }
        guard let parameters = pattern.match(request.url) else { return nil }
        let candidate = MockRequest(request, parameters: parameters)
        for condition in conditions where !condition.test(candidate) { return nil }
        return parameters
    }

    /// The route as it reads in messages, for example `GET /users/:id [Authorization: <redacted>]`.
    public var description: String {
        var text = "\(method?.rawValue ?? "*") \(pattern.text)"
        if !conditions.isEmpty {
            text += " [" + conditions.map(\.description).joined(separator: ", ") + "]"
        }
        if let delayDescription {
            text += " (\(delayDescription))"
        }
        return text
    }

    /// What an expectation asks for, for messages: `exactly 1 call`, `2...3 calls`, `at least 1 call`.
    static func describe(_ range: ClosedRange<Int>) -> String {
        func calls(_ count: Int) -> String { count == 1 ? "1 call" : "\(count) calls" }
        if range.lowerBound == range.upperBound { return "exactly " + calls(range.lowerBound) }
        if range.upperBound == Int.max { return "at least " + calls(range.lowerBound) }
        return "\(range.lowerBound)...\(range.upperBound) calls"
    }

    private static func pathPart(of path: String) -> String {
        path.firstIndex(of: "?").map { String(path[..<$0]) } ?? path
    }

    private static func queryPart(of path: String) -> [(String, String?)] {
        guard let mark = path.firstIndex(of: "?") else { return [] }
        var components = URLComponents()
        components.percentEncodedQuery = String(path[path.index(after: mark)...])
        return (components.queryItems ?? []).map { ($0.name, $0.value) }
    }

    private static func queryCondition(_ name: String, _ value: String?) -> Condition {
        let shown = Redaction.sensitiveParameterNames.contains(name.lowercased()) ? "REDACTED" : (value ?? "*")
        return Condition(description: "?\(name)=\(shown)") { request in
            guard let actual = request.queryValue(name) else { return false }
            return value == nil || actual == value
        }
    }
}

/// Collects ``MockRoute`` values for ``MockTransport/init(unmatched:routes:)``, with `if`, `switch` and
/// `for` allowed between them.
@resultBuilder
public enum MockRouteBuilder {
    /// Takes one route.
    ///
    /// - Parameter route: The route.
    /// - Returns: It, in a list.
    public static func buildExpression(_ route: MockRoute) -> [MockRoute] { [route] }

    /// Takes a list of routes made elsewhere.
    ///
    /// - Parameter routes: The routes.
    /// - Returns: The same routes.
    public static func buildExpression(_ routes: [MockRoute]) -> [MockRoute] { routes }

    /// Joins the statements of a block.
    ///
    /// - Parameter components: The routes of each statement.
    /// - Returns: All routes, in order.
    public static func buildBlock(_ components: [MockRoute]...) -> [MockRoute] { components.flatMap { $0 } }

    /// Takes the routes of an `if` without `else`.
    ///
    /// - Parameter component: The routes, when the condition held.
    /// - Returns: The routes, or none.
    public static func buildOptional(_ component: [MockRoute]?) -> [MockRoute] { component ?? [] }

    /// Takes the first branch of an `if`/`else` or `switch`.
    ///
    /// - Parameter component: The branch's routes.
    /// - Returns: The same routes.
    public static func buildEither(first component: [MockRoute]) -> [MockRoute] { component }

    /// Takes the second branch of an `if`/`else` or `switch`.
    ///
    /// - Parameter component: The branch's routes.
    /// - Returns: The same routes.
    public static func buildEither(second component: [MockRoute]) -> [MockRoute] { component }

    /// Takes the routes of a `for` loop.
    ///
    /// - Parameter components: The routes of each iteration.
    /// - Returns: All routes, in order.
    public static func buildArray(_ components: [[MockRoute]]) -> [MockRoute] { components.flatMap { $0 } }

    /// Takes the routes of an `if #available` block.
    ///
    /// - Parameter component: The routes.
    /// - Returns: The same routes.
    public static func buildLimitedAvailability(_ component: [MockRoute]) -> [MockRoute] { component }
}
