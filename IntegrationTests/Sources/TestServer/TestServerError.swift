/// Why a test server could not start.
public struct TestServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in words.
    public let description: String

    /// Creates an error.
    ///
    /// - Parameter description: What went wrong.
    public init(_ description: String) {
        self.description = description
    }
}
