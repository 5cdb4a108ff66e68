/// The JSON body of the server's error answers: a 401 that refuses a token or asks for credentials, a failed
/// token request, and the typed API error of `/protected-403` (the one with a `code`).
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// Always `true`.
    public var error = true
    /// The API's error code; only `/protected-403` sends one (999).
    public var code: Int?
    /// What went wrong, for example `Expired token.`.
    public var reason: String

    /// An error answer.
    public init(code: Int? = nil, reason: String) {
        self.code = code
        self.reason = reason
    }
}
