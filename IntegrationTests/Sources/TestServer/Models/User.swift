/// The user `/json` and `/users/:id` answer: `Ada` for 42, `User N` for any other id N.
public struct User: Codable, Sendable, Equatable {
    /// The user's id.
    public var id: Int
    /// The user's name.
    public var name: String

    /// Creates a user.
    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}
