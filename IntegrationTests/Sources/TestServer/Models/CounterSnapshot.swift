/// The counters the server keeps for one key, as `/count/:key` and `/wait/:key` report them.
///
/// Keys are chosen by the test, so tests that run in parallel never share a counter.
public struct CounterSnapshot: Codable, Sendable, Equatable {
    /// The key these counters belong to.
    public var key: String
    /// Requests counted for the key: `/hit/:key`, and any request carrying `countKey=KEY` in its
    /// query or an `X-Count-Key: KEY` header.
    public var hits = 0
    /// Requests `/flaky/:key` has received for the key (failed ones and successful ones).
    public var flakyAttempts = 0
    /// `/hang?key=KEY` requests that are waiting right now.
    public var hanging = 0
    /// `/hang?key=KEY` requests that have ended: the client went away or the server shut down.
    public var hangsEnded = 0
    /// `/wait/:key` long polls on the key that are waiting right now.
    public var waiting = 0

    /// A snapshot of a key nothing has counted yet: every counter at zero.
    public init(key: String) {
        self.key = key
    }
}
