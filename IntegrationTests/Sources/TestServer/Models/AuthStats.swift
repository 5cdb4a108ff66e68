/// What `GET /auth/:realm/stats` answers: how one realm's tokens have been used.
public struct AuthStats: Codable, Sendable, Equatable {
    /// The realm.
    public var realm: String
    /// `POST /auth/:realm/token` requests received, including those told to fail.
    public var tokenRequests: Int
    /// Tokens issued.
    public var issued: Int
    /// Tokens issued after the first one: `max(issued - 1, 0)`.
    public var refreshes: Int
    /// Protected requests that carried the current, unexpired token.
    public var accepted: Int
    /// Protected requests turned away (no token, a revoked one, an expired one, or garbage).
    public var rejected: Int

    /// Creates realm statistics.
    ///
    /// - Parameters:
    ///   - realm: The realm.
    ///   - tokenRequests: Token requests received.
    ///   - issued: Tokens issued.
    ///   - refreshes: Tokens issued after the first.
    ///   - accepted: Protected requests accepted.
    ///   - rejected: Protected requests rejected.
    public init(realm: String, tokenRequests: Int, issued: Int, refreshes: Int, accepted: Int, rejected: Int) {
        self.realm = realm
        self.tokenRequests = tokenRequests
        self.issued = issued
        self.refreshes = refreshes
        self.accepted = accepted
        self.rejected = rejected
    }
}
