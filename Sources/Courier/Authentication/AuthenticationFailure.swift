public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Decides whether a response means "the credential was rejected", for
/// ``Middleware/authenticating(with:scheme:failure:origins:)``.
///
/// ```swift
/// .authenticating(with: auth)                                   // 401 (the default)
/// .authenticating(with: auth, failure: .status(401, 419))
/// .authenticating(with: auth, failure: .status(401).or(AuthenticationFailure { response in
///     // this API answers 403 with {"code": 999} for an expired token
///     response.statusCode == 403 && (try? JSONDecoder().decode(APIError.self, from: response.body))?.code == 999
/// }))
/// ```
///
/// It is asked about every response, whether it came back as a response or as a thrown ``CourierError``
/// with a status (as `.validatingStatus()` throws), so keep it cheap: check the status first.
public struct AuthenticationFailure: Sendable {
    /// What the predicate sees of a response.
    public struct Response: Sendable {
        /// The status code.
        public let statusCode: Int
        /// The body (at most ``CourierError/maximumStoredBodySize`` bytes when it came from a thrown error).
        public let body: Data
        private let response: HTTPURLResponse?
        private let headers: [String: String]

        /// Creates a response summary from an HTTP response.
        public init(_ response: HTTPURLResponse, body: Data) {
            self.statusCode = response.statusCode
            self.body = body
            self.response = response
            self.headers = [:]
        }

        /// Creates a response summary from its parts.
        public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
            self.statusCode = statusCode
            self.body = body
            self.response = nil
            self.headers = headers
        }

        /// Returns the value of the header `name`, compared case-insensitively.
        ///
        /// - Parameter name: A header name, for example `WWW-Authenticate`.
        /// - Returns: The value, or `nil` when the response has no such header.
        public func value(forHTTPHeaderField name: String) -> String? {
            if let response { return response.value(forHTTPHeaderField: name) }
            return headers.headerValue(name)
        }
    }

    private let statuses: [Int]
    private let predicate: (@Sendable (Response) -> Bool)?

    /// Creates a rule from a predicate.
    ///
    /// - Parameter predicate: Returns `true` when the response means the credential was rejected.
    public init(_ predicate: @escaping @Sendable (Response) -> Bool) {
        self.statuses = []
        self.predicate = predicate
    }

    private init(statuses: [Int], predicate: (@Sendable (Response) -> Bool)?) {
        self.statuses = statuses
        self.predicate = predicate
    }

    /// A response with status 401 Unauthorized: the default.
    public static let unauthorized = AuthenticationFailure.status(401)

    /// A response with any of these statuses.
    ///
    /// - Parameter statuses: The status codes, for example `401, 419`.
    public static func status(_ statuses: Int...) -> AuthenticationFailure {
        AuthenticationFailure(statuses: statuses, predicate: nil)
    }

    /// A rule that matches when this one or `other` does.
    public func or(_ other: AuthenticationFailure) -> AuthenticationFailure {
        let predicates = [predicate, other.predicate].compactMap { $0 }
        guard !predicates.isEmpty else {
            return AuthenticationFailure(statuses: statuses + other.statuses, predicate: nil)
        }
        return AuthenticationFailure(statuses: statuses + other.statuses) { response in
            predicates.contains { $0(response) }
        }
    }

    /// Whether `response` means the credential was rejected.
    ///
    /// - Parameter response: What the server answered.
    /// - Returns: `true` for a rejection.
    public func matches(_ response: Response) -> Bool {
        statuses.contains(response.statusCode) || (predicate?(response) ?? false)
    }

    /// The same as ``matches(_:)``, building the summary only when a predicate needs it.
    func matches(_ response: HTTPURLResponse, body: Data) -> Bool {
        if statuses.contains(response.statusCode) { return true }
        guard let predicate else { return false }
        return predicate(Response(response, body: body))
    }

    /// Whether a thrown error carries a rejection: a ``CourierError`` with a status that matches.
    ///
    /// The predicate sees the real response the error was made from (its headers unredacted), not the
    /// error's redacted copy of them.
    func matches(_ error: CourierError) -> Bool {
        guard let statusCode = error.statusCode else { return false }
        if statuses.contains(statusCode) { return true }
        guard let predicate else { return false }
        if let response = error.response {
            return predicate(Response(response, body: error.responseBody ?? Data()))
        }
        return predicate(
            Response(statusCode: statusCode, headers: error.responseHeaders, body: error.responseBody ?? Data())
        )
    }
}
