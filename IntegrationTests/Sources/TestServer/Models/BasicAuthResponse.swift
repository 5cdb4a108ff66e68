/// What `/basic-auth/:user/:password` answers to the right credentials.
public struct BasicAuthResponse: Codable, Sendable, Equatable {
    /// Always `true`.
    public var authenticated = true
    /// The user the credentials named.
    public var user: String

    /// The answer for `user`.
    public init(user: String) {
        self.user = user
    }
}
