/// The JSON body of `/flaky/:key`, on failure and on success alike.
public struct FlakyResponse: Codable, Sendable, Equatable {
    /// The key the attempts are counted under.
    public var key: String
    /// The attempt this request was, counting from 1.
    public var attempts: Int
    /// `true` on the failing attempts, `false` once the endpoint succeeds.
    public var error: Bool

    /// Creates a flaky response.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - attempts: The attempt number, from 1.
    ///   - error: Whether this attempt failed.
    public init(key: String, attempts: Int, error: Bool) {
        self.key = key
        self.attempts = attempts
        self.error = error
    }
}
