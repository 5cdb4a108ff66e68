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
/// **Replies**: a route answers with the responses given to ``replies(_:then:)`` in order, one per call,
/// and repeats the last one when it runs out; without any, it answers `200 OK`. A route made with a
/// closure asks it on every call.
///
/// **Order**: a mock tries its routes in the order they were written and answers with the first that
/// matches, so put narrower routes (with header or query conditions) before broader ones.
///
/// **Expectations**: ``expectCalls(_:fileID:filePath:line:column:)-(Int,_,_,_,_)`` says how often a route
/// must be called; ``MockTransport/unmetExpectations`` lists what was not met, and the `.mockTransport` test
/// trait records it as a test issue.
public struct MockRoute: Sendable, CustomStringConvertible {
    /// Where an expectation was written, for reporting it.
    typealias SourcePosition = (fileID: String, filePath: String, line: Int, column: Int)

    /// A condition on a request besides its method and path.
    struct Condition: Sendable {
        let description: String
        let test: @Sendable (MockRequest) -> Bool
    }

    /// The method to match, or `nil` for any.
    public let method: HTTPMethod?

    /// The path pattern as written, for example `/users/:id` (with an optional `?name=value` query part).
    public let path: String

    /// The answers, in order; the last one repeats.
    private(set) var replies: [MockResponse]

    /// How many calls the route must get, if that matters.
    private(set) var expectedCalls: Range<Int>?

    /// Where ``expectedCalls`` was written.
    private(set) var expectationPosition: SourcePosition?

    private let pattern: PathPattern
    private var conditions: [Condition] = []

    /// Creates a route for `method` (`nil` for any) and a path pattern, answering `response` until you give
    /// it other replies. The spellings `MockRoute.get(_:_:)`, `.post`, `.put`, `.patch`, `.delete`, `.head`
    /// and `.any` call this.
    ///
    /// - Parameters:
    ///   - method: The method to match, or `nil` for any.
    ///   - path: The path pattern, for example `/users/:id` or `/search?q=swift`.
    ///   - response: The answer to every call; `200 OK` by default.
    public init(_ method: HTTPMethod?, _ path: String, _ response: MockResponse = .ok) {
        self.method = method
        self.path = path
        self.replies = [response]
        let mark = path.firstIndex(of: "?")
        self.pattern = PathPattern(mark.map { String(path[..<$0]) } ?? path)
        if let mark {
            var components = URLComponents()
            components.percentEncodedQuery = String(path[path.index(after: mark)...])
            for item in components.queryItems ?? [] {
                conditions.append(Self.queryCondition(item.name, item.value))
            }
        }
    }

    /// Answers with `handler` when one is given, `200 OK` otherwise.
    private init(_ method: HTTPMethod?, _ path: String, _ handler: MockHandler?) {
        self.init(method, path, handler.map(MockResponse.handler) ?? .ok)
    }

    // MARK: Spellings

    // One per method, each a call of the initializer. Without a handler the route answers `200 OK` until
    // `replies(_:then:)` says otherwise; with one, the handler decides every answer:
    // `MockRoute.get("/users/:id") { request in .json(User(id: request.parameters["id"]!)) }`.

    /// A `GET` route.
    public static func get(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.get, path, handler) }

    /// A `POST` route.
    public static func post(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.post, path, handler) }

    /// A `PUT` route.
    public static func put(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.put, path, handler) }

    /// A `PATCH` route.
    public static func patch(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.patch, path, handler) }

    /// A `DELETE` route.
    public static func delete(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.delete, path, handler) }

    /// A `HEAD` route.
    public static func head(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(.head, path, handler) }

    /// A route for any method.
    public static func any(_ path: String, _ handler: MockHandler? = nil) -> Self { Self(nil, path, handler) }

    // MARK: Replies

    /// Returns a copy that answers `first` to the first call, then each of `rest` in turn, and repeats the
    /// last answer from then on.
    ///
    /// ```swift
    /// MockRoute.get("/me").replies(.unauthorized(), then: .json(me))
    /// ```
    ///
    /// - Parameters:
    ///   - first: The answer to the first call.
    ///   - rest: The answers to the next calls.
    public func replies(_ first: MockResponse, then rest: MockResponse...) -> MockRoute {
        var copy = self
        copy.replies = [first] + rest
        return copy
    }

    // MARK: Conditions

    /// Returns a copy that matches only requests with the query item `name` (and, when `value` is given,
    /// with that value).
    ///
    /// ```swift
    /// MockRoute.get("/search").matchingQuery("q") { request in .text("results for \(request.queryValue("q")!)") }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The query item's name.
    ///   - value: The value it must have (percent-decoded), or `nil` for any.
    ///   - handler: Answers every call the route matches, as the closure of ``get(_:_:)`` does; without one,
    ///     the route keeps its replies.
    public func matchingQuery(_ name: String, _ value: String? = nil, _ handler: MockHandler? = nil) -> MockRoute {
        var copy = self.answering(handler)
        copy.conditions.append(Self.queryCondition(name, value))
        return copy
    }

    /// Returns a copy that matches only requests with the header `name` (and, when `value` is given, with
    /// exactly that value).
    ///
    /// ```swift
    /// MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh").replies(.json(me))
    /// MockRoute.get("/me").matchingHeader("Authorization", "Bearer fresh") { request in .json(me) }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The header's name (case-insensitive).
    ///   - value: The value it must have, or `nil` for any.
    ///   - handler: Answers every call the route matches, as the closure of ``get(_:_:)`` does; without one,
    ///     the route keeps its replies.
    public func matchingHeader(_ name: String, _ value: String? = nil, _ handler: MockHandler? = nil) -> MockRoute {
        var copy = self.answering(handler)
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
    ///   - handler: Answers every call the route matches, as the closure of ``get(_:_:)`` does; without one,
    ///     the route keeps its replies.
    public func matchingBody<Body: Decodable & Equatable & Sendable>(
        _ expected: Body,
        decoder: JSONDecoder = JSONDecoder(),
        _ handler: MockHandler? = nil
    ) -> MockRoute {
        var copy = self.answering(handler)
        copy.conditions.append(
            Condition(description: "body == \(Body.self)") { request in
                (try? request.decodedBody(as: Body.self, decoder: decoder)) == expected
            }
        )
        return copy
    }

    /// This route, answering with `handler` when one is given.
    private func answering(_ handler: MockHandler?) -> MockRoute {
        guard let handler else { return self }
        var copy = self
        copy.replies = [.handler(handler)]
        return copy
    }

    /// Returns a copy that matches only requests for which `predicate` is `true`.
    ///
    /// Its trailing closure is the predicate; to answer with a closure as well, give it to the route
    /// (`MockRoute.get("/items") { request in … }.matching("…") { … }`) or use
    /// `.replies(.handler { request in … })`.
    ///
    /// - Parameters:
    ///   - description: How the condition reads in messages.
    ///   - predicate: Decides whether a request matches.
    public func matching(
        _ description: String = "custom condition",
        _ predicate: @escaping @Sendable (MockRequest) -> Bool
    ) -> MockRoute {
        var copy = self
        copy.conditions.append(Condition(description: description, test: predicate))
        return copy
    }

    // MARK: Expectations

    /// Returns a copy that must be called exactly `count` times; ``MockTransport/unmetExpectations`` (and
    /// the `.mockTransport` trait, at this line) reports it otherwise.
    ///
    /// ```swift
    /// MockRoute.post("/oauth/token").replies(.json(token)).expectCalls(1)
    /// ```
    ///
    /// - Parameters:
    ///   - count: The number of calls.
    ///   - fileID: Where the expectation is written.
    ///   - filePath: Where the expectation is written.
    ///   - line: Where the expectation is written.
    ///   - column: Where the expectation is written.
    public func expectCalls(
        _ count: Int,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> MockRoute {
        expectCalls(count...count, fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Returns a copy that must be called a number of times within `range`: `2...3`, or `1...` for at
    /// least once.
    ///
    /// - Parameters:
    ///   - range: The acceptable numbers of calls.
    ///   - fileID: Where the expectation is written.
    ///   - filePath: Where the expectation is written.
    ///   - line: Where the expectation is written.
    ///   - column: Where the expectation is written.
    public func expectCalls(
        _ range: some RangeExpression<Int>,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> MockRoute {
        var copy = self
        copy.expectedCalls = range.relative(to: 0..<Int.max)
        copy.expectationPosition = (fileID, filePath, line, column)
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
        return text
    }

    /// What an expectation asks for, for messages: `exactly 1 call`, `2...3 calls`, `at least 1 call`.
    static func describe(_ range: Range<Int>) -> String {
        func calls(_ count: Int) -> String { count == 1 ? "1 call" : "\(count) calls" }
        if range.count == 1 { return "exactly " + calls(range.lowerBound) }
        if range.upperBound == Int.max { return "at least " + calls(range.lowerBound) }
        return "\(range.lowerBound)...\(range.upperBound - 1) calls"
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
    /// - Returns: It, in a list.
    public static func buildExpression(_ route: MockRoute) -> [MockRoute] { [route] }

    /// Takes a list of routes made elsewhere.
    ///
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
    /// - Returns: The same routes.
    public static func buildLimitedAvailability(_ component: [MockRoute]) -> [MockRoute] { component }
}
