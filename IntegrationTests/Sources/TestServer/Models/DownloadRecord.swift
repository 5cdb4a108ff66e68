/// One request `GET /download/:key` received, as `GET /download/:key/log` lists them.
public struct DownloadRecord: Codable, Sendable, Equatable {
    /// The request's `Range`, if it sent one.
    public var range: String?
    /// The request's `If-Range`, if it sent one.
    public var ifRange: String?
    /// The status the server answered.
    public var status: Int
    /// The version of the resource the answer carried.
    public var version: Int
    /// Whether the server cut or stalled this answer's body on purpose.
    public var faulted: Bool
}
