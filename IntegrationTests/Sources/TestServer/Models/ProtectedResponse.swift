/// What a protected endpoint (`/protected`, `/auth/:realm/protected`) answers to the current token.
public struct ProtectedResponse: Codable, Sendable, Equatable {
    /// Always `true`.
    public var ok = true
    /// The realm whose token was accepted; `default` for `/protected`.
    public var realm: String

    /// The answer for a token of `realm`.
    public init(realm: String) {
        self.realm = realm
    }
}
