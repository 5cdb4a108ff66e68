/// What `POST /auth/:realm/token` answers: a new bearer token, which revokes the previous one.
public struct TokenResponse: Codable, Sendable, Equatable {
    /// The token to send as `Authorization: Bearer <token>`.
    public var token: String
    /// Seconds until the server stops accepting the token.
    public var expiresIn: Int
}
